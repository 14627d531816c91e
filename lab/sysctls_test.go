package lab

import (
	"errors"
	"testing"

	"github.com/cnibench/cnibench/internal/hosttest"
	"github.com/cnibench/cnibench/internal/netnsx"
)

// A new network namespace copies the root's IPv4 "all" and "default"
// devconf (net.core.devconf_inherit_init_net=0): on a Docker or Kubernetes
// host (ip_forward=1) a pod that inherited would forward. With the root's
// ip_forward set to 1 during Up, every namespace still has the lab's own
// values, for "all", "default", lo and the devices the lab made.
func TestSysctlsDoNotInheritTheHost(t *testing.T) {
	needRoot(t)
	hosttest.SetRootForwarding(t, "1") // restored after the lab is down (cleanups run last first)
	l := newLab(t, Config{Nodes: 2, PodsPerNode: 1})
	fwd := map[string]string{"underlay": "0", "node0": "1", "node0-pod0": "0"}
	for name, ns := range map[string]string{"underlay": l.Underlay, "node0": l.Nodes[0].Netns, "node0-pod0": l.Nodes[0].Pods[0].Netns} {
		want := map[string]string{"net.ipv4.ip_forward": fwd[name]}
		for _, dev := range []string{"all", "default", "lo"} {
			c := "net.ipv4.conf." + dev + "."
			want[c+"forwarding"] = fwd[name]
			for _, k := range []string{"rp_filter", "accept_local", "route_localnet", "proxy_arp", "arp_ignore", "arp_announce", "arp_filter", "log_martians"} {
				want[c+k] = "0"
			}
		}
		switch name {
		case "node0-pod0":
			want["net.ipv4.conf.eth0.forwarding"] = "0"
			want["net.ipv4.conf.eth0.rp_filter"] = "0"
		case "node0":
			want["net.ipv4.conf.eth0.forwarding"] = "1"
			want["net.ipv4.conf.cnbp0.proxy_arp"] = "1"
		case "underlay":
			// Bridged underlay frames skip netfilter (the keys exist only
			// with br_netfilter loaded, as Docker does).
			for _, k := range []string{"iptables", "ip6tables", "arptables"} {
				want["net.bridge.bridge-nf-call-"+k] = "0"
			}
		}
		err := netnsx.Do(netnsx.Path(ns), func() error {
			for k, v := range want {
				got, err := netnsx.ReadSysctl(k)
				if errors.Is(err, netnsx.ErrNoSysctl) && name == "underlay" {
					continue
				}
				if err != nil {
					return err
				}
				if got != v {
					t.Errorf("%s: %s = %q, want %q", name, k, got, v)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
}
