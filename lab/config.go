package lab

import (
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/cnibench/cnibench/datapath"
)

// Limits of a lab.
const (
	MaxNodes        = 16
	MaxPodsPerNode  = 32
	DefaultName     = "default"
	DefaultStateDir = "/run/cnibench"
)

// Config describes a lab to create.
type Config struct {
	Name        string            `json:"name"`          // default "default"; all objects prefixed "cnb-<name>-"; [a-z0-9]{1,12}
	Nodes       int               `json:"nodes"`         // default 2, range 1..16
	PodsPerNode int               `json:"pods_per_node"` // default 2, range 1..32
	Sysctls     map[string]string `json:"sysctls"`       // applied in every node and pod namespace; nil = DefaultSysctls()
	Routing     string            `json:"routing"`       // "native" (default) or "vxlan": how pod traffic crosses nodes
	// Encryption encrypts pod traffic between nodes: "wireguard" (a
	// WireGuard device per node, package lab/wireguard), "" for none.
	// Under vxlan the overlay's packets go through it.
	Encryption string `json:"encryption,omitempty"`
	// ServiceDatapath is how ClusterIP Services are implemented in this lab
	// (one of datapath.Names), "" for none; recorded here, programmed by
	// the run that uses the lab.
	ServiceDatapath string `json:"service_datapath,omitempty"`
	StateDir        string `json:"-"` // default "/run/cnibench"
}

// DefaultSysctls returns the sysctls applied in every node and pod namespace
// when Config.Sysctls is nil. Keys absent from a namespace (for example
// net.netfilter.* without conntrack) are recorded as "unsupported".
func DefaultSysctls() map[string]string {
	return map[string]string{
		"net.ipv4.ip_local_port_range":                     "1024 65535",
		"net.ipv4.tcp_tw_reuse":                            "1",
		"net.core.somaxconn":                               "65535",
		"net.ipv4.tcp_max_syn_backlog":                     "65535",
		"net.netfilter.nf_conntrack_tcp_timeout_time_wait": "30",
	}
}

var (
	nameRe      = regexp.MustCompile(`^[a-z0-9]{1,12}$`)
	sysctlKeyRe = regexp.MustCompile(`^net[./][A-Za-z0-9_.\-/]+$`)
)

// ValidName reports whether name is a valid lab name.
func ValidName(name string) error {
	if !nameRe.MatchString(name) {
		return fmt.Errorf("lab config: name %q must be 1-12 characters of [a-z0-9]", name)
	}
	return nil
}

// Validate fills defaults and checks every field. Errors are one line and
// name the bad field.
func (c *Config) Validate() error {
	if c.Name == "" {
		c.Name = DefaultName
	}
	if err := ValidName(c.Name); err != nil {
		return err
	}
	if c.Nodes == 0 {
		c.Nodes = 2
	}
	if c.Nodes < 1 || c.Nodes > MaxNodes {
		return fmt.Errorf("lab config: nodes must be 1..%d, got %d", MaxNodes, c.Nodes)
	}
	if c.PodsPerNode == 0 {
		c.PodsPerNode = 2
	}
	if c.PodsPerNode < 1 || c.PodsPerNode > MaxPodsPerNode {
		return fmt.Errorf("lab config: pods_per_node must be 1..%d, got %d", MaxPodsPerNode, c.PodsPerNode)
	}
	if c.Sysctls == nil {
		c.Sysctls = DefaultSysctls()
	}
	keys := make([]string, 0, len(c.Sysctls))
	for k := range c.Sysctls {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := c.Sysctls[k]
		// Only network-namespaced keys: anything else (kernel.*, vm.*)
		// would change the host.
		if !sysctlKeyRe.MatchString(k) || strings.Contains(k, "..") {
			return fmt.Errorf("lab config: sysctls key %q must be a net.* sysctl (only network-namespace sysctls are allowed)", k)
		}
		if strings.ContainsAny(v, "\n\r") || strings.TrimSpace(v) == "" {
			return fmt.Errorf("lab config: sysctls value for %q must be a non-empty single line, got %q", k, v)
		}
	}
	if c.Routing == "" {
		c.Routing = RoutingNative
	}
	if c.Routing != RoutingNative && c.Routing != RoutingVXLAN {
		return fmt.Errorf("lab config: routing must be %q or %q, got %q", RoutingNative, RoutingVXLAN, c.Routing)
	}
	if c.Encryption != "" && c.Encryption != EncryptionWireGuard {
		return fmt.Errorf("lab config: encryption must be %q or empty, got %q", EncryptionWireGuard, c.Encryption)
	}
	if c.ServiceDatapath != "" && !slices.Contains(datapath.Names(), c.ServiceDatapath) {
		return fmt.Errorf("lab config: service datapath %q unknown (known: %s)", c.ServiceDatapath, strings.Join(datapath.Names(), ", "))
	}
	if c.StateDir == "" {
		c.StateDir = DefaultStateDir
	}
	abs, err := filepath.Abs(c.StateDir)
	if err != nil {
		return fmt.Errorf("lab config: state_dir %q: %v", c.StateDir, err)
	}
	c.StateDir = abs
	return nil
}

// Prefix is the name prefix of every object of lab name: "cnb-<name>-".
func Prefix(name string) string { return "cnb-" + name + "-" }
