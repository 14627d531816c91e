package policy

import (
	"fmt"
	"net/netip"

	"github.com/cnibench/cnibench/datapath"
)

// Port is one L4 port a rule allows; Port 0 allows every port of the
// protocol, and an empty Protocol every protocol (then Port must be 0).
type Port struct {
	Protocol datapath.Protocol `json:"protocol,omitempty"`
	Port     uint16            `json:"port,omitempty"`
}

// Rule allows traffic between the pod and Peers on Ports (no Ports: every
// port), as one ingress or egress rule of a NetworkPolicy does.
type Rule struct {
	Peers []netip.Prefix `json:"peers"`
	Ports []Port         `json:"ports,omitempty"`
}

// PodPolicy is the policy of one selected pod. A pod selected for a
// direction (Ingress or Egress non-nil) drops every packet of a new flow
// in that direction no rule allows; replies of allowed flows pass. A nil
// slice leaves the direction unselected (all allowed); an empty non-nil
// slice denies all.
type PodPolicy struct {
	Pod       string     `json:"pod"`        // e.g. "node1-pod0"
	Node      string     `json:"node"`       // the node whose namespace holds HostIface
	IP        netip.Addr `json:"ip"`         // the pod's address
	HostIface string     `json:"host_iface"` // host side of the pod's veth, in the node's namespace
	Ingress   []Rule     `json:"ingress,omitempty"`
	Egress    []Rule     `json:"egress,omitempty"`
}

// Spec is the whole desired policy state of a lab (every node's pods; an
// enforcer opened on one node programs the pods whose Node is its own).
type Spec struct {
	Pods []PodPolicy `json:"pods"`
}

// OnNode is the part of s an enforcer of node programs.
func (s Spec) OnNode(node string) Spec {
	var out Spec
	for _, p := range s.Pods {
		if p.Node == node {
			out.Pods = append(out.Pods, p)
		}
	}
	return out
}

// Validate says what is wrong with s in one line: a pod without a name,
// address or interface, a pod listed twice, a port without a protocol.
func (s Spec) Validate() error {
	seen := map[string]bool{}
	for _, p := range s.Pods {
		switch {
		case p.Pod == "" || p.Node == "" || p.HostIface == "":
			return fmt.Errorf("policy: pod %q: name, node and host interface are required", p.Pod)
		case !p.IP.Is4():
			return fmt.Errorf("policy: pod %s: address %v is not IPv4", p.Pod, p.IP)
		case seen[p.Pod]:
			return fmt.Errorf("policy: pod %s listed twice", p.Pod)
		}
		seen[p.Pod] = true
		for _, rules := range [][]Rule{p.Ingress, p.Egress} {
			for i, r := range rules {
				if len(r.Peers) == 0 {
					return fmt.Errorf("policy: pod %s: rule %d has no peers", p.Pod, i)
				}
				for _, pr := range r.Peers {
					if !pr.IsValid() || !pr.Addr().Is4() {
						return fmt.Errorf("policy: pod %s: rule %d: peer %v is not an IPv4 prefix", p.Pod, i, pr)
					}
				}
				for _, pt := range r.Ports {
					if pt.Protocol == "" && pt.Port != 0 {
						return fmt.Errorf("policy: pod %s: rule %d: port %d without a protocol", p.Pod, i, pt.Port)
					}
					if pt.Protocol != "" && pt.Protocol != datapath.TCP && pt.Protocol != datapath.UDP {
						return fmt.Errorf("policy: pod %s: rule %d: protocol %q is not TCP or UDP", p.Pod, i, pt.Protocol)
					}
				}
			}
		}
	}
	return nil
}
