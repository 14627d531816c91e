package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"github.com/cnibench/cnibench/datapath"
	"github.com/cnibench/cnibench/internal/netnsx"
	"github.com/cnibench/cnibench/lab"
)

// labFlags are the lab settings shared by `lab up` and `run` (which brings a
// lab up when none is running).
type labFlags struct {
	nodes, podsPerNode int
	sysctls            []string
	routing            string
	encryption         string
	serviceDatapath    string
}

func (f *labFlags) register(fs *pflag.FlagSet) {
	fs.IntVar(&f.nodes, "nodes", 2, "lab nodes (when the lab is created)")
	fs.IntVar(&f.podsPerNode, "pods-per-node", 2, "pods on each lab node (when the lab is created)")
	fs.StringVar(&f.routing, "routing", lab.RoutingNative, "how pod traffic crosses nodes: native (routes via node IPs) or vxlan (overlay, MTU lowered by 50)")
	fs.StringVar(&f.encryption, "encryption", "", "encrypt pod traffic between nodes: wireguard (a WireGuard device per node, userspace wireguard-go; MTU lowered by 60) (default none)")
	fs.StringVar(&f.serviceDatapath, "service-datapath", "", "ClusterIP Service datapath in the lab: "+strings.Join(datapath.Names(), ", ")+" (default none)")
	fs.StringArrayVar(&f.sysctls, "sysctl", nil, "KEY=VALUE net.* sysctl set inside every lab namespace, on top of the defaults (repeatable)")
}

// config checks the flags and builds the lab config.
func (f *labFlags) config(fs *pflag.FlagSet, g *globals) (lab.Config, error) {
	cfg := lab.Config{Name: g.labName, StateDir: g.stateDir, Nodes: f.nodes, PodsPerNode: f.podsPerNode, Routing: f.routing, Encryption: f.encryption, ServiceDatapath: f.serviceDatapath}
	for _, name := range []string{"nodes", "pods-per-node"} {
		if v, _ := fs.GetInt(name); fs.Changed(name) && v < 1 {
			return cfg, fmt.Errorf("--%s must be at least 1, got %d", name, v)
		}
	}
	if f.routing != lab.RoutingNative && f.routing != lab.RoutingVXLAN {
		return cfg, fmt.Errorf("--routing must be %s or %s, got %q", lab.RoutingNative, lab.RoutingVXLAN, f.routing)
	}
	if f.encryption != "" && f.encryption != lab.EncryptionWireGuard {
		return cfg, fmt.Errorf("--encryption must be %s, got %q", lab.EncryptionWireGuard, f.encryption)
	}
	if len(f.sysctls) > 0 {
		cfg.Sysctls = lab.DefaultSysctls()
		for _, kv := range f.sysctls {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || strings.TrimSpace(k) == "" {
				return cfg, fmt.Errorf("--sysctl %q: want KEY=VALUE, e.g. net.ipv4.tcp_tw_reuse=1", kv)
			}
			setSysctl(cfg.Sysctls, strings.TrimSpace(k), strings.TrimSpace(v))
		}
	}
	return cfg, cfg.Validate()
}

// setSysctl sets key to value in m, replacing any key that names the same
// kernel sysctl (net/ipv4/tcp_tw_reuse is net.ipv4.tcp_tw_reuse): the lab
// applies m in map order, so two spellings of one key would give either
// value, and a default would override the user's.
func setSysctl(m map[string]string, key, value string) {
	for k := range m {
		if netnsx.SysctlPath(k) == netnsx.SysctlPath(key) {
			delete(m, k)
		}
	}
	m[key] = value
}
