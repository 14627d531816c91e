package l7proxy

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
)

// Ports and the uid the proxies use, as Istio's: 15001 outbound, 15006
// inbound, uid/gid 1337 excluded from the client pod's capture.
const (
	PortOutbound = 15001 // client sidecar (127.0.0.1); per-node proxies, +i for their i-th destination
	PortInbound  = 15006 // server sidecar
	ProxyUID     = 1337
)

// proxy is one HAProxy process of a deployment.
type proxy struct {
	Name    string   // "node-node1", "client-node0-pod0", "server-node1-pod0"
	Netns   string   // where it runs
	Binds   []string // listen addresses "ip:port"
	Enforce bool     // applies the rules; else forwards everything
	UID     int      // runs as this uid/gid after binding; 0: root
}

// natRule is one iptables nat rule of a deployment, tagged with the
// deployment's comment when applied.
type natRule struct {
	Netns string   `json:"netns"`
	Chain string   `json:"chain"` // PREROUTING | OUTPUT
	Args  []string `json:"args"`  // match and target, without -t/-A/comment
}

// plan lists the proxies and nat rules of s (validated).
func plan(s Spec) ([]proxy, []natRule) {
	port := strconv.Itoa(s.Port)
	switch s.Model {
	case PerNode:
		return planPerNode(s, port)
	case PerNodeEgress:
		return planEgress(s, port)
	}
	var ps []proxy
	var rs []natRule
	// The client sidecar captures outgoing HTTP, except its own (uid).
	ps = append(ps, proxy{Name: "client-" + s.Client.Name, Netns: s.Client.Netns,
		Binds: []string{fmt.Sprintf("127.0.0.1:%d", PortOutbound)}, UID: ProxyUID})
	rs = append(rs, natRule{Netns: s.Client.Netns, Chain: "OUTPUT", Args: []string{
		"-p", "tcp", "--dport", strconv.Itoa(s.clientPort()), "-m", "owner", "!", "--uid-owner", strconv.Itoa(ProxyUID),
		"-j", "REDIRECT", "--to-ports", strconv.Itoa(PortOutbound)}})
	for _, p := range s.Servers {
		ps = append(ps, proxy{Name: "server-" + p.Name, Netns: p.Netns,
			Binds: []string{fmt.Sprintf("0.0.0.0:%d", PortInbound)}, Enforce: true, UID: ProxyUID})
		rs = append(rs, natRule{Netns: p.Netns, Chain: "PREROUTING", Args: []string{
			"-p", "tcp", "-d", p.IP + "/32", "--dport", port,
			"-j", "REDIRECT", "--to-ports", strconv.Itoa(PortInbound)}})
	}
	return ps, rs
}

// planPerNode gives each node holding a server one proxy on the node's
// address and a PREROUTING DNAT of each of the node's server pods' HTTP
// port to it. DNAT to the node address, not REDIRECT: REDIRECT goes to the
// incoming interface's address, and a pod's host veth has none.
//
// Each pod gets a port of its own on the proxy (PortOutbound, +1, ...):
// with one port, a client port's connections to two pods of the node would
// share one reply tuple after the DNAT, conntrack would give the later one
// another source port, and that port meets the proxy's TIME_WAIT socket of
// another client connection whose TCP timestamps (offset per four-tuple)
// look older: PAWS rejects the SYN and the client waits 10 ms to 1 s.
// Measured with one port: HTTP_RPS_SHORT_C64 through one per-node proxy
// in front of two pods fell from 19,400 req/s in the first round to 2,100
// by the fourth (rounds 5 s apart; 5,600 PAWS rejects at the proxy).
// (Cilium's TPROXY keeps the pod address as the proxy socket's own, which
// has the same effect.)
func planPerNode(s Spec, port string) ([]proxy, []natRule) {
	byNode := map[string][]PodRef{}
	for _, p := range s.Servers {
		byNode[p.Node] = append(byNode[p.Node], p)
	}
	nodes := make([]string, 0, len(byNode))
	for n := range byNode {
		nodes = append(nodes, n)
	}
	sort.Strings(nodes)
	var ps []proxy
	var rs []natRule
	for _, n := range nodes {
		first := byNode[n][0]
		px := proxy{Name: "node-" + n, Netns: first.NodeNetns, Enforce: true}
		for i, p := range byNode[n] {
			to := fmt.Sprintf("%s:%d", p.NodeIP, PortOutbound+i)
			px.Binds = append(px.Binds, to)
			rs = append(rs, natRule{Netns: p.NodeNetns, Chain: "PREROUTING", Args: []string{
				"-p", "tcp", "-d", p.IP + "/32", "--dport", port,
				"-j", "DNAT", "--to-destination", to}})
		}
		ps = append(ps, px)
	}
	return ps, rs
}

// planEgress gives the client's node one proxy and a PREROUTING DNAT, in
// that node, of the client pod's connections to each Service address and
// each server pod on the client port, a proxy port per destination (why:
// planPerNode). The rules match the client's address, as an egress policy
// selects its pods; the proxy connects to the original destination from
// its node, where a netfilter Service datapath translates a ClusterIP in
// OUTPUT. Inserted first in PREROUTING, they take the client's
// connections before a Service datapath's DNAT there would.
func planEgress(s Spec, port string) ([]proxy, []natRule) {
	c := s.Client
	px := proxy{Name: "node-" + c.Node, Netns: c.NodeNetns, Enforce: true}
	dests := slices.Clone(s.Services)
	for _, p := range s.Servers {
		dests = append(dests, p.IP)
	}
	cport := strconv.Itoa(s.clientPort())
	var rs []natRule
	for i, d := range dests {
		to := fmt.Sprintf("%s:%d", c.NodeIP, PortOutbound+i)
		px.Binds = append(px.Binds, to)
		p := cport
		if i >= len(s.Services) {
			p = port // a pod is dialled on its own port
		}
		rs = append(rs, natRule{Netns: c.NodeNetns, Chain: "PREROUTING", Args: []string{
			"-p", "tcp", "-s", c.IP + "/32", "-d", d + "/32", "--dport", p,
			"-j", "DNAT", "--to-destination", to}})
	}
	return []proxy{px}, rs
}

// routeProto tags the routes l7proxy adds (iproute2's "proto"), so
// teardown finds them, also after a crash.
const routeProto = "203"

// serviceRoute lets the egress proxy connect to a Service address from its
// node: the lab routes no Service address anywhere (datapath.ServiceCIDR),
// so connect() would fail before the nat OUTPUT hook where a netfilter
// Service datapath translates it, as a real node's default route lets it.
// The route is to lo with the node's address as source: an untranslated
// packet stays in the node.
type serviceRoute struct {
	Netns string `json:"netns"`
	Dst   string `json:"dst"` // Service address
	Src   string `json:"src"` // the node's address
}

// serviceRoutes are the routes the egress model needs; none otherwise.
func serviceRoutes(s Spec) []serviceRoute {
	if s.Model != PerNodeEgress {
		return nil
	}
	var out []serviceRoute
	for _, a := range s.Services {
		out = append(out, serviceRoute{Netns: s.Client.NodeNetns, Dst: a, Src: s.Client.NodeIP})
	}
	return out
}
