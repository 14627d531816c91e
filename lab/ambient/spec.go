package ambient

import (
	"errors"
	"fmt"
	"net/netip"

	"github.com/cnibench/cnibench/datapath"
	"github.com/cnibench/cnibench/internal/netnsx"
	"github.com/cnibench/cnibench/lab"
)

// Ports as ztunnel's: 15001 takes a node's pods' outbound traffic, 15008
// (HBONE's port) the mTLS tunnels from the other nodes to its first pod,
// 15008+i to its i-th.
const (
	PortOutbound = 15001
	PortInbound  = 15008
	// PortToWaypoint takes a node's pods' traffic to the destinations a
	// waypoint serves (its capture rules send it there); PortWaypoint is
	// the waypoint's mTLS port, past the node proxies' inbound ports.
	PortToWaypoint = 15002
	PortWaypoint   = PortInbound + maxPods
)

// maxPods bounds a node's pods, each with an inbound port of its own.
const maxPods = 64

// Node is one lab node as the ambient mesh needs it.
type Node struct {
	Name    string `json:"name"`     // "node0": names its proxy and certificate
	Netns   string `json:"netns"`    // path of the node's namespace
	IP      string `json:"ip"`       // the node's address: the proxy listens there
	PodCIDR string `json:"pod_cidr"` // its pods' addresses
	// Pods are its pods' addresses, in order: pod i's tunnels arrive on
	// PortInbound+i (why: rules).
	Pods []string `json:"pods"`
	// Uplink is the device the other nodes' traffic arrives on, where the
	// proof captures it: eth0, or the VXLAN device (decapsulated).
	Uplink string `json:"uplink"`
}

// Spec is one ambient mesh: every node of a lab.
type Spec struct {
	Nodes []Node `json:"nodes"`
	// ServiceCIDR is captured from the pods like the pod CIDRs and routed
	// to lo in the nodes, so the outbound proxy can dial a ClusterIP for
	// the node's Service datapath to translate (nat OUTPUT).
	ServiceCIDR string `json:"service_cidr"`
	// Waypoint is the node a waypoint would run in ("": none can): the
	// node proxies then know its address and the mesh makes its
	// certificate, and StartWaypoint may start it.
	Waypoint string `json:"waypoint,omitempty"`
}

// FromLab is the Spec of every node of l.
func FromLab(l *lab.Lab) Spec {
	s := Spec{ServiceCIDR: datapath.ServiceCIDR.String()}
	for _, n := range l.Nodes {
		up := "eth0"
		if l.Routing == lab.RoutingVXLAN {
			up = lab.VXLANDev
		}
		var pods []string
		for _, p := range n.Pods {
			pods = append(pods, p.IP)
		}
		s.Nodes = append(s.Nodes, Node{Name: n.Name, Netns: netnsx.Path(n.Netns), IP: n.IP, PodCIDR: n.PodCIDR, Pods: pods, Uplink: up})
	}
	return s
}

// Validate says, in one line, what is wrong with s.
func (s Spec) Validate() error {
	if len(s.Nodes) == 0 {
		return errors.New("ambient: no nodes")
	}
	if p, err := netip.ParsePrefix(s.ServiceCIDR); err != nil || !p.Addr().Is4() {
		return fmt.Errorf("ambient: Service CIDR %q is not an IPv4 prefix", s.ServiceCIDR)
	}
	seen := map[string]bool{}
	for _, n := range s.Nodes {
		if n.Name == "" || n.Netns == "" || n.Uplink == "" {
			return fmt.Errorf("ambient: node %+v: name, netns and uplink are required", n)
		}
		if seen[n.Name] {
			return fmt.Errorf("ambient: node %q given twice", n.Name)
		}
		seen[n.Name] = true
		if ip, err := netip.ParseAddr(n.IP); err != nil || !ip.Is4() {
			return fmt.Errorf("ambient: node %q: address %q is not IPv4", n.Name, n.IP)
		}
		cidr, err := netip.ParsePrefix(n.PodCIDR)
		if err != nil || !cidr.Addr().Is4() {
			return fmt.Errorf("ambient: node %q: pod CIDR %q is not an IPv4 prefix", n.Name, n.PodCIDR)
		}
		if len(n.Pods) == 0 || len(n.Pods) > maxPods {
			return fmt.Errorf("ambient: node %q has %d pods: want 1 to %d (a port each)", n.Name, len(n.Pods), maxPods)
		}
		for _, p := range n.Pods {
			if ip, err := netip.ParseAddr(p); err != nil || !cidr.Contains(ip) {
				return fmt.Errorf("ambient: node %q: pod address %q is not in its pod CIDR %s", n.Name, p, n.PodCIDR)
			}
		}
	}
	if _, ok := s.node(s.Waypoint); s.Waypoint != "" && !ok {
		return fmt.Errorf("ambient: waypoint node %q is not in the mesh", s.Waypoint)
	}
	return nil
}

// node is the node named name.
func (s Spec) node(name string) (Node, bool) {
	for _, n := range s.Nodes {
		if n.Name == name {
			return n, true
		}
	}
	return Node{}, false
}
