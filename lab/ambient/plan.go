package ambient

import (
	"fmt"
	"strconv"
)

// natRule is one iptables nat rule of the mesh, tagged when applied.
type natRule struct {
	Netns string   `json:"netns"`
	Chain string   `json:"chain"` // PREROUTING
	Args  []string `json:"args"`  // match and target, without -t/-I/comment
}

// rules are the mesh's capture rules, two kinds in every node:
//   - outbound: TCP from the node's pods to any pod CIDR or the Service
//     CIDR goes to the node's proxy (DNAT to the node's address: a pod's
//     host veth has none for REDIRECT);
//   - inbound: TCP to the node's pods from anywhere but its own pods (the
//     other nodes' proxies) goes to the node's TLS port, one port per pod
//     (PortInbound+i). With one port, a proxy's connections from one
//     source port to two pods of the node would share one reply tuple
//     after the DNAT; conntrack would remap the later one's source port
//     onto the TIME_WAIT socket of another connection, whose older TCP
//     timestamps make PAWS drop its SYN (measured on l7proxy's per-node
//     model: short-connection rates fell 90% within five rounds).
//
// Both are inserted at the top of PREROUTING, before a Service
// datapath's DNAT would end the nat pass: a ClusterIP is captured as the
// pod dialled it and translated later, when the proxy dials it from the
// node (nat OUTPUT). The two kinds match disjoint sources.
func rules(s Spec) []natRule {
	var out []natRule
	dests := []string{}
	for _, n := range s.Nodes {
		dests = append(dests, n.PodCIDR)
	}
	dests = append(dests, s.ServiceCIDR)
	for _, n := range s.Nodes {
		for _, d := range dests {
			out = append(out, natRule{Netns: n.Netns, Chain: "PREROUTING", Args: []string{
				"-p", "tcp", "-s", n.PodCIDR, "-d", d,
				"-j", "DNAT", "--to-destination", n.IP + ":" + strconv.Itoa(PortOutbound)}})
		}
		for i, pod := range n.Pods {
			out = append(out, natRule{Netns: n.Netns, Chain: "PREROUTING", Args: []string{
				"-p", "tcp", "!", "-s", n.PodCIDR, "-d", pod + "/32",
				"-j", "DNAT", "--to-destination", n.IP + ":" + strconv.Itoa(PortInbound+i)}})
		}
	}
	return out
}

// routeProto tags the mesh's routes (iproute2's "proto"; l7proxy's is
// 203), so teardown finds them, also after a crash.
const routeProto = "204"

// serviceRoute lets a node's proxy dial a ClusterIP: the lab routes no
// Service address (datapath.ServiceCIDR), so connect() would fail before
// the nat OUTPUT hook where the Service datapath translates it. To lo
// with the node's address as source: an untranslated packet stays home.
type serviceRoute struct {
	Netns string `json:"netns"`
	Dst   string `json:"dst"`
	Src   string `json:"src"`
}

func serviceRoutes(s Spec) []serviceRoute {
	var out []serviceRoute
	for _, n := range s.Nodes {
		out = append(out, serviceRoute{Netns: n.Netns, Dst: s.ServiceCIDR, Src: n.IP})
	}
	return out
}

// ruleArgs is r as iptables arguments inserting it, tagged t.
func (r natRule) insertArgs(t string) []string {
	args := append([]string{"-w", "-t", "nat", "-I", r.Chain, "1"}, r.Args...)
	return append(args, "-m", "comment", "--comment", t)
}

// tag is the iptables comment on every rule of a lab's mesh.
func tag(prefix string) string { return prefix + "ambient" }

func (r serviceRoute) String() string { return fmt.Sprintf("%s via lo src %s", r.Dst, r.Src) }
