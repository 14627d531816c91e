package lab

// The plan: what a lab will be (names, addresses, routes, sysctls), computed
// from its Config alone. Nothing here touches the kernel; build turns the
// plan into live objects.

import (
	"fmt"
	"path/filepath"
	"sort"

	"github.com/cnibench/cnibench/lab/wireguard"
)

// Names and addresses of node i and its pod j (see the package comment).
func nodeIP(i int) string     { return fmt.Sprintf("198.18.0.%d", 10+i) }
func podCIDR(i int) string    { return fmt.Sprintf("198.19.%d.0/24", i) }
func podIP(i, j int) string   { return fmt.Sprintf("198.19.%d.%d", i, 10+j) }
func vtepIP(i int) string     { return fmt.Sprintf("198.19.%d.0", i) }
func vtepMAC(i int) string    { return fmt.Sprintf("02:cb:00:00:00:%02x", i) }
func wgIP(i int) string       { return fmt.Sprintf("198.18.192.%d", 10+i) }
func nodeName(i int) string   { return fmt.Sprintf("node%d", i) }
func podName(i, j int) string { return fmt.Sprintf("node%d-pod%d", i, j) }

// bridgePort is the underlay end of node i's uplink veth, a port of cnbbr0.
func bridgePort(i int) string { return fmt.Sprintf("cnbn%d", i) }

// hostIf is the node end of pod j's veth.
func hostIf(j int) string { return fmt.Sprintf("cnbp%d", j) }

// HostIface is the name of pod's veth in its node's namespace (where
// kube-proxy-like rules, tc programs and policy chains see the pod).
func (l *Lab) HostIface(pod string) (string, error) {
	for _, n := range l.Nodes {
		for j, p := range n.Pods {
			if p.Name == pod {
				return hostIf(j), nil
			}
		}
	}
	return "", fmt.Errorf("lab %s has no pod %q", l.Config.Name, pod)
}

// plan fills in the names and addresses of a lab for cfg (already validated).
func plan(cfg Config, cgroupRoot string) *Lab {
	p := Prefix(cfg.Name)
	if cfg.Routing == "" {
		cfg.Routing = RoutingNative
	}
	l := &Lab{
		Config:     cfg,
		Prefix:     p,
		Underlay:   p + "underlay",
		Routing:    cfg.Routing,
		MTU:        MTU,
		CgroupRoot: cgroupRoot,
		Sysctls:    map[string]string{},
	}
	if l.Routing == RoutingVXLAN {
		l.MTU = VXLANMTU
	}
	if cfg.Encryption == EncryptionWireGuard {
		l.MTU -= wireguard.Overhead
	}
	cg := func(n string) string {
		if cgroupRoot == "" {
			return ""
		}
		return filepath.Join(cgroupRoot, n)
	}
	for i := 0; i < cfg.Nodes; i++ {
		n := Node{Name: nodeName(i), Netns: p + nodeName(i), IP: nodeIP(i), PodCIDR: podCIDR(i), Cgroup: cg(nodeName(i))}
		if l.Routing == RoutingVXLAN {
			n.VTEP, n.VTEPMAC = vtepIP(i), vtepMAC(i)
		}
		if cfg.Encryption == EncryptionWireGuard {
			n.WireGuard = &NodeWireGuard{Addr: wgIP(i), Cgroup: cg("wg-" + nodeName(i))}
		}
		for j := 0; j < cfg.PodsPerNode; j++ {
			n.Pods = append(n.Pods, Pod{Name: podName(i, j), Node: n.Name, Netns: p + podName(i, j), IP: podIP(i, j), Cgroup: cg(podName(i, j))})
		}
		l.Nodes = append(l.Nodes, n)
	}
	return l
}

// namespaces returns every namespace name of the lab, underlay first.
func (l *Lab) namespaces() []string {
	out := []string{l.Underlay}
	for _, n := range l.Nodes {
		out = append(out, n.Netns)
		for _, p := range n.Pods {
			out = append(out, p.Netns)
		}
	}
	return out
}

// Kinds of namespace, which decide the sysctls build writes in each.
const (
	kindUnderlay = "underlay"
	kindNode     = "node"
	kindPod      = "pod"
)

// sortedKeys returns the keys of m sorted: the order sysctls are written in.
func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// peerRoute is node i's route to another node's pod CIDR.
type peerRoute struct {
	Peer Node   // the other node
	Dst  string // its pod CIDR
	Via  string // native: its node IP, on eth0; vxlan: its VTEP IP, onlink on cnb_vxlan
}

// peerRoutes returns node i's routes to every other node's pod CIDR, in
// node order.
func (l *Lab) peerRoutes(i int) []peerRoute {
	var out []peerRoute
	for k, other := range l.Nodes {
		if k == i {
			continue
		}
		via := other.IP
		if l.Routing == RoutingVXLAN {
			via = other.VTEP
		}
		out = append(out, peerRoute{Peer: other, Dst: other.PodCIDR, Via: via})
	}
	return out
}
