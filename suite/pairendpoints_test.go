package suite

import (
	"errors"
	"testing"
)

// Pair k's endpoints: node0's even pods are the clients, so no endpoint is
// a client in one pair and a server in another; pair 0 is the placement's
// own; a pod-to-service pair has the server pod of the pod-to-pod pair of
// its node; host-to-host has no second pair.
func TestPairEndpoints(t *testing.T) {
	first := [2]string{"first-client", "first-server"}
	for _, c := range []struct {
		placement string
		k         int
		want      [2]string
	}{
		{PodToPodSameNode, 0, first},
		{PodToPodSameNode, 2, [2]string{"node0-pod4", "node0-pod5"}},
		{PodToPodOtherNode, 3, [2]string{"node0-pod6", "node1-pod3"}},
		{PodToServiceSameNode, 1, [2]string{"node0-pod2", "node0-pod3"}},
		{PodToServiceOtherNode, 1, [2]string{"node0-pod2", "node1-pod1"}},
		{HostToHostOtherNod, 0, first},
	} {
		got, err := PairEndpoints(c.placement, c.k, first)
		if err != nil || got != c.want {
			t.Errorf("%s pair %d: %v %v, want %v", c.placement, c.k, got, err, c.want)
		}
	}
	if _, err := PairEndpoints(HostToHostOtherNod, 1, first); !errors.Is(err, ErrUnsupported) {
		t.Errorf("host-to-host pair 1: %v", err)
	}
}
