package suite

import (
	"fmt"
	"strings"
)

// Pairs' endpoints, the same on every target so that their results line
// up (docs/pairs.md). Pair 0 is each placement's usual endpoints; pair
// k > 0 takes its own pods, so that no endpoint is a client in one pair
// and a server in another:
//
//	pod-to-pod/same-node     node0-pod<2k> → node0-pod<2k+1>
//	pod-to-pod/other-node    node0-pod<2k> → node1-pod<k>
//	pod-to-service/*         node0-pod<2k> → a Service in front of the
//	                         pod-to-pod pair's server (the lab: its one
//	                         test Service)
//	host-to-host/other-node  pair 0 only: one host per node
//
// Every client is an even pod of node0 (or node0's host), so N pairs need
// 2N pods on node0 and N on node1.

// PairClient is pair k's client pod.
func PairClient(k int) string { return fmt.Sprintf("node0-pod%d", 2*k) }

// PairPodServer is pair k's server pod on a pod-to-pod placement of that
// node ("same-node" or "other-node"), and the backend a target puts behind
// pair k's own Service on the pod-to-service placement of that node.
func PairPodServer(node string, k int) string {
	if node == "same-node" {
		return fmt.Sprintf("node0-pod%d", 2*k+1)
	}
	return fmt.Sprintf("node1-pod%d", k)
}

// PairEndpoints are pair k's (client, server) of a placement whose pair 0
// is first. A pod-to-service pair k > 0 has its own server pod,
// PairPodServer of the placement's node, behind a Service of its own (a
// target whose pairs share one Service replaces the server by it).
// Host-to-host has no pair k > 0 (ErrUnsupported).
func PairEndpoints(placement string, k int, first [2]string) ([2]string, error) {
	if k == 0 {
		return first, nil
	}
	if placement == HostToHostOtherNod {
		return first, fmt.Errorf("%s has one host per node, no second pair: %w", placement, ErrUnsupported)
	}
	_, node, _ := strings.Cut(placement, "/")
	return [2]string{PairClient(k), PairPodServer(node, k)}, nil
}
