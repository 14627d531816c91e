package l7proxy

import (
	"fmt"
	"sort"
	"strconv"
)

// Ports and the uid the proxies use, as Istio's: 15001 outbound, 15006
// inbound, uid/gid 1337 excluded from the client pod's capture.
const (
	PortOutbound = 15001 // client sidecar (127.0.0.1) and per-node proxy
	PortInbound  = 15006 // server sidecar
	ProxyUID     = 1337
)

// proxy is one HAProxy process of a deployment.
type proxy struct {
	Name    string // "node-node1", "client-node0-pod0", "server-node1-pod0"
	Netns   string // where it runs
	Bind    string // listen address "ip:port"
	Enforce bool   // applies the rules; else forwards everything
	UID     int    // runs as this uid/gid after binding; 0: root
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
	if s.Model == PerNode {
		return planPerNode(s, port)
	}
	var ps []proxy
	var rs []natRule
	// The client sidecar captures outgoing HTTP, except its own (uid).
	ps = append(ps, proxy{Name: "client-" + s.Client.Name, Netns: s.Client.Netns,
		Bind: fmt.Sprintf("127.0.0.1:%d", PortOutbound), UID: ProxyUID})
	rs = append(rs, natRule{Netns: s.Client.Netns, Chain: "OUTPUT", Args: []string{
		"-p", "tcp", "--dport", strconv.Itoa(s.clientPort()), "-m", "owner", "!", "--uid-owner", strconv.Itoa(ProxyUID),
		"-j", "REDIRECT", "--to-ports", strconv.Itoa(PortOutbound)}})
	for _, p := range s.Servers {
		ps = append(ps, proxy{Name: "server-" + p.Name, Netns: p.Netns,
			Bind: fmt.Sprintf("0.0.0.0:%d", PortInbound), Enforce: true, UID: ProxyUID})
		rs = append(rs, natRule{Netns: p.Netns, Chain: "PREROUTING", Args: []string{
			"-p", "tcp", "-d", p.IP + "/32", "--dport", port,
			"-j", "REDIRECT", "--to-ports", strconv.Itoa(PortInbound)}})
	}
	return ps, rs
}

// planPerNode gives each node holding a server one proxy on the node's
// address and a PREROUTING DNAT of the node's server pods' HTTP port to
// it. DNAT to the node address, not REDIRECT: REDIRECT goes to the
// incoming interface's address, and a pod's host veth has none.
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
		ps = append(ps, proxy{Name: "node-" + n, Netns: first.NodeNetns,
			Bind: fmt.Sprintf("%s:%d", first.NodeIP, PortOutbound), Enforce: true})
		for _, p := range byNode[n] {
			rs = append(rs, natRule{Netns: p.NodeNetns, Chain: "PREROUTING", Args: []string{
				"-p", "tcp", "-d", p.IP + "/32", "--dport", port,
				"-j", "DNAT", "--to-destination", fmt.Sprintf("%s:%d", p.NodeIP, PortOutbound)}})
		}
	}
	return ps, rs
}
