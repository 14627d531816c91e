package ebpf

import (
	"net/netip"
	"testing"

	"github.com/cnibench/cnibench/datapath"
	"github.com/cnibench/cnibench/lab/policy"
)

func pfx(s string) netip.Prefix { return netip.MustParsePrefix(s) }

// statePod: ingress from 10/8 on TCP 80 and from 10.1.2.3 on anything;
// egress to 192.168/16 on any UDP port.
func statePod() policy.PodPolicy {
	return policy.PodPolicy{Pod: "node0-pod0", Node: "node0", IP: netip.MustParseAddr("198.19.0.10"), HostIface: "cnbp0",
		Ingress: []policy.Rule{
			{Peers: []netip.Prefix{pfx("10.0.0.0/8")}, Ports: []policy.Port{{Protocol: datapath.TCP, Port: 80}}},
			{Peers: []netip.Prefix{pfx("10.1.2.3/32")}},
		},
		Egress: []policy.Rule{{Peers: []netip.Prefix{pfx("192.168.0.0/16")}, Ports: []policy.Port{{Protocol: datapath.UDP}}}},
	}
}

// TestBuildIdentitiesAndWildcards: one identity per prefix; a rule covers
// the identities of the more specific prefixes inside its peers (the
// ipcache answers 10.1.2.3 with the /32's identity, which the /8 rule must
// allow on port 80); no ports is the wildcard protocol, a port-less
// protocol the wildcard port.
func TestBuildIdentitiesAndWildcards(t *testing.T) {
	var ids identities
	s, err := build([]policy.PodPolicy{statePod()}, []string{"cnbp0"}, []uint32{7}, &ids)
	if err != nil {
		t.Fatal(err)
	}
	id := func(p string) uint32 {
		v, ok := s.ipc[ipcKeyOf(pfx(p))]
		if !ok || v < firstIdentity {
			t.Fatalf("ipcache has no identity for %s (%d)", p, v)
		}
		return v
	}
	if len(s.ipc) != 4 {
		t.Errorf("ipcache %v: want 4 prefixes (3 peers and the pod)", s.ipc)
	}
	want := map[polKey]polVal{
		{Ep: 7, Identity: id("10.0.0.0/8"), Dport: be16(80), Proto: ipprotoTCP, Dir: dirIngress}:  {0},
		{Ep: 7, Identity: id("10.1.2.3/32"), Dport: be16(80), Proto: ipprotoTCP, Dir: dirIngress}: {0},
		{Ep: 7, Identity: id("10.1.2.3/32"), Dir: dirIngress}:                                     {1},
		{Ep: 7, Identity: id("192.168.0.0/16"), Proto: ipprotoUDP, Dir: dirEgress}:                {0},
	}
	if len(s.pol) != len(want) {
		t.Errorf("policy map %v, want %v", s.pol, want)
	}
	for k, v := range want {
		if got, ok := s.pol[k]; !ok || got != v {
			t.Errorf("policy entry %s = %v (present %v), want %v", k, got, ok, v)
		}
	}
	if ep := s.eps[7]; ep.Flags != epIngress|epEgress || ep.Identity != id("198.19.0.10/32") {
		t.Errorf("endpoint entry %+v", ep)
	}
	if c := s.counts(); c.Pods != 1 || c.Rules != 3 || c.Peers != 3 || c.MapEntries != 9 {
		t.Errorf("counts %+v", c)
	}

	// Identities survive a change that adds a prefix sorting before them.
	before := id("192.168.0.0/16")
	p := statePod()
	p.Egress = append(p.Egress, policy.Rule{Peers: []netip.Prefix{pfx("1.0.0.0/8")}})
	p.Ingress = nil // unselected: no ingress entries, flag cleared
	s, err = build([]policy.PodPolicy{p}, []string{"cnbp0"}, []uint32{7}, &ids)
	if err != nil {
		t.Fatal(err)
	}
	if id("192.168.0.0/16") != before {
		t.Errorf("identity of 192.168.0.0/16 changed from %d to %d", before, id("192.168.0.0/16"))
	}
	if len(s.ipc) != 3 || len(s.pol) != 2 || s.eps[7].Flags != epEgress {
		t.Errorf("after the change: ipcache %v, policy %v, endpoint %+v", s.ipc, s.pol, s.eps[7])
	}
}

// TestExpectedAndCapacity: Expected counts the node's pods only, and a
// Spec needing more policy entries than the map holds is refused with the
// map named.
func TestExpectedAndCapacity(t *testing.T) {
	other := statePod()
	other.Pod, other.Node = "node1-pod0", "node1"
	e := &Enforcer{site: policy.Site{Node: "node0"}}
	got := e.Expected(policy.Spec{Pods: []policy.PodPolicy{statePod(), other}})
	if got != (policy.Counts{Pods: 1, Rules: 3, Peers: 3, MapEntries: 9}) {
		t.Errorf("Expected = %+v", got)
	}
	peers, _ := policy.ScalePeers(policy.MaxScalePeers)
	var ports []policy.Port
	for i := range PolicyMax/policy.MaxScalePeers + 1 {
		ports = append(ports, policy.Port{Protocol: datapath.TCP, Port: uint16(1000 + i)})
	}
	p := statePod()
	p.Ingress = []policy.Rule{{Peers: peers, Ports: ports}}
	s, err := build([]policy.PodPolicy{p}, []string{"cnbp0"}, []uint32{1}, &identities{})
	if err != nil {
		t.Fatal(err)
	}
	err = e.fits(s)
	if ce, ok := err.(*CapacityError); !ok || ce.Map != "policy map" || ce.Needs <= PolicyMax {
		t.Fatalf("fits = %v, want a CapacityError for the policy map", err)
	}
	t.Log(err)
}
