package policy

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/datapath"
)

func TestScalePeersDistinctInsideBase(t *testing.T) {
	peers, err := ScalePeers(MaxScalePeers)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[netip.Prefix]bool{}
	for _, p := range peers {
		if !scaleBase.Contains(p.Addr()) || p.Bits() != 32 || seen[p] {
			t.Fatalf("peer %v outside %v, not a /32 or repeated", p, scaleBase)
		}
		seen[p] = true
	}
	if _, err := ScalePeers(MaxScalePeers + 1); err == nil {
		t.Fatal("ScalePeers accepted more peers than the range holds")
	}
	rules, err := ScaleRules(3, Port{Protocol: datapath.TCP, Port: 80})
	if err != nil || len(rules) != 3 || rules[2].Peers[0] != peers[2] {
		t.Fatalf("ScaleRules(3) = %v, %v", rules, err)
	}
}

func TestSpecValidate(t *testing.T) {
	ok := PodPolicy{Pod: "node1-pod0", Node: "node1", IP: netip.MustParseAddr("198.19.1.10"), HostIface: "cnb-x-1-0",
		Ingress: []Rule{{Peers: []netip.Prefix{netip.MustParsePrefix("198.19.0.10/32")}, Ports: []Port{{Protocol: datapath.TCP, Port: 80}}}}}
	if err := (Spec{Pods: []PodPolicy{ok}}).Validate(); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		mod  func(p *PodPolicy)
		want string
	}{
		"no iface":     {func(p *PodPolicy) { p.HostIface = "" }, "host interface"},
		"no peers":     {func(p *PodPolicy) { p.Ingress = []Rule{{}} }, "no peers"},
		"port no prot": {func(p *PodPolicy) { p.Ingress[0].Ports = []Port{{Port: 80}} }, "without a protocol"},
		"sctp":         {func(p *PodPolicy) { p.Ingress[0].Ports = []Port{{Protocol: "SCTP"}} }, "not TCP or UDP"},
	} {
		p := ok
		p.Ingress = append([]Rule(nil), ok.Ingress...)
		c.mod(&p)
		err := (Spec{Pods: []PodPolicy{p}}).Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want it to say %q", name, err, c.want)
		}
	}
	if err := (Spec{Pods: []PodPolicy{ok, ok}}).Validate(); err == nil {
		t.Error("a pod listed twice was accepted")
	}
}

func TestOnNodeAndCountsHolds(t *testing.T) {
	s := Spec{Pods: []PodPolicy{{Pod: "a", Node: "node0"}, {Pod: "b", Node: "node1"}}}
	if got := s.OnNode("node1"); len(got.Pods) != 1 || got.Pods[0].Pod != "b" {
		t.Fatalf("OnNode(node1) = %+v", got)
	}
	if err := (Counts{Pods: 1, Rules: 2, Peers: 3, Chains: 9}).Holds(Counts{Pods: 1, Rules: 2, Peers: 3}); err != nil {
		t.Fatal(err)
	}
	if err := (Counts{Pods: 1, Rules: 1, Peers: 3}).Holds(Counts{Pods: 1, Rules: 2, Peers: 3}); err == nil {
		t.Fatal("a missing rule held")
	}
}
