package labtarget

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/lab"
	"github.com/cnibench/cnibench/suite"
	"github.com/cnibench/cnibench/targets/labtarget/part"
)

// Pair k's endpoints: node0's even pods are the clients, so no endpoint is
// a client in one pair and a server in another; pair 0 is the placement's
// usual endpoints; host-to-host has no second pair.
func TestPairEndpoints(t *testing.T) {
	for _, c := range []struct {
		placement string
		k         int
		want      [2]string
	}{
		{suite.PodToPodSameNode, 0, [2]string{"node0-pod0", "node0-pod1"}},
		{suite.PodToPodSameNode, 2, [2]string{"node0-pod4", "node0-pod5"}},
		{suite.PodToPodOtherNode, 0, [2]string{"node0-pod0", "node1-pod0"}},
		{suite.PodToPodOtherNode, 3, [2]string{"node0-pod6", "node1-pod3"}},
		{suite.PodToServiceOtherNode, 1, [2]string{"node0-pod2", "node1-pods"}},
		{suite.PodToServiceSameNode, 1, [2]string{"node0-pod2", "node0-pods"}},
	} {
		got, err := pairEndpoints(c.placement, c.k)
		if err != nil || got != c.want {
			t.Errorf("%s pair %d: %v %v, want %v", c.placement, c.k, got, err, c.want)
		}
	}
	if _, err := pairEndpoints(suite.HostToHostOtherNod, 1); !errors.Is(err, suite.ErrUnsupported) {
		t.Errorf("host-to-host pair 1: %v", err)
	}
	if PodsNeeded(1) != 2 || PodsNeeded(16) != 32 {
		t.Errorf("pods needed %d %d", PodsNeeded(1), PodsNeeded(16))
	}
}

// The same-node test Service's backends leave out every pair's client; with
// one pair they are what they always were (node0's pods but node0-pod0).
func TestServiceBackendsLeaveOutPairClients(t *testing.T) {
	names := func(pairs int) []string {
		pods, err := serviceBackends(fakeLab(2, 6), "node0-pods", pairs)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, p := range pods {
			out = append(out, p.Name)
		}
		return out
	}
	if got := names(1); !slices.Equal(got, []string{"node0-pod1", "node0-pod2", "node0-pod3", "node0-pod4", "node0-pod5"}) {
		t.Errorf("one pair: %v", got)
	}
	if got := names(3); !slices.Equal(got, []string{"node0-pod1", "node0-pod3", "node0-pod5"}) {
		t.Errorf("three pairs: %v", got)
	}
}

// A part whose client side is one pod's is refused with pairs; the
// server-side ones are not.
func TestPairPartsRefused(t *testing.T) {
	parts := func(names ...string) Config {
		c := Config{Pairs: 2}
		for _, n := range names {
			c.Parts = append(c.Parts, namedPart(n))
		}
		return c
	}
	for _, n := range []string{"l7-sidecar", "l7-egress"} {
		if err := checkPairParts(parts("iptables", n)); err == nil || !strings.Contains(err.Error(), n) {
			t.Errorf("%s: %v", n, err)
		}
	}
	if err := checkPairParts(parts("iptables", "policy", "ambient", "waypoint")); err != nil {
		t.Errorf("policy, ambient, waypoint: %v", err)
	}
	if err := checkPairParts(parts("ebpf", "wireguard", "l7-node")); err != nil {
		t.Errorf("l7-node: %v", err)
	}
	c := parts("l7-sidecar")
	c.Pairs = 1
	if err := checkPairParts(c); err != nil {
		t.Errorf("one pair: %v", err)
	}
}

// namedPart is a part that only has a name.
type namedPart string

func (p namedPart) Name() string                                      { return string(p) }
func (p namedPart) Token() string                                     { return string(p) }
func (namedPart) Phase() part.Phase                                   { return 0 }
func (namedPart) Configure(*lab.Config)                               {}
func (namedPart) Conflicts(part.Scenario) error                       { return nil }
func (namedPart) Open(context.Context, part.Env) (part.Opened, error) { return nil, nil }

// The servers a part must cover are every pair's: three pairs of
// pod-to-pod have three servers, pod-to-service one backend group,
// host-to-host one host.
func TestPlacementServers(t *testing.T) {
	tgt := &Target{cfg: Config{Pairs: 3}}
	for pl, want := range map[string][]string{
		suite.PodToPodOtherNode:     {"node1-pod0", "node1-pod1", "node1-pod2"},
		suite.PodToPodSameNode:      {"node0-pod1", "node0-pod3", "node0-pod5"},
		suite.PodToServiceOtherNode: {"node1-pods"},
		suite.HostToHostOtherNod:    {"node1"},
	} {
		if got := tgt.PlacementServers(pl); !slices.Equal(got, want) {
			t.Errorf("%s: %v, want %v", pl, got, want)
		}
	}
}
