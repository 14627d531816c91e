package nfrule

import (
	"fmt"
	"net/netip"
	"testing"

	"github.com/cnibench/cnibench/datapath"
	"github.com/cnibench/cnibench/lab/policy"
)

func pfx(ss ...string) []netip.Prefix {
	var out []netip.Prefix
	for _, s := range ss {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}

func TestElements(t *testing.T) {
	for _, c := range []struct {
		in   []netip.Prefix
		want string
	}{
		{pfx("10.1.2.3/8", "10.1.0.0/16", "192.168.0.1/32", "192.168.0.1/32"), "[10.0.0.0/8 192.168.0.1/32]"},
		{pfx("0.0.0.0/0", "10.0.0.0/8"), "[0.0.0.0/1 128.0.0.0/1]"},
		{pfx("198.18.0.2/32", "198.18.0.1/32"), "[198.18.0.1/32 198.18.0.2/32]"},
	} {
		if got := fmt.Sprint(Elements(c.in)); got != c.want {
			t.Errorf("Elements(%v) = %s, want %s", c.in, got, c.want)
		}
	}
	elems := map[netip.Prefix]bool{}
	for _, e := range Elements(pfx("0.0.0.0/0")) {
		elems[e] = true
	}
	if n := Covered(pfx("0.0.0.0/0", "10.0.0.0/8", "10.0.0.0/8"), elems); n != 2 {
		t.Errorf("Covered = %d, want 2 (the /0 and the /8 once)", n)
	}
	delete(elems, netip.MustParsePrefix("128.0.0.0/1"))
	if n := Covered(pfx("0.0.0.0/0", "200.0.0.0/8"), elems); n != 0 {
		t.Errorf("Covered with half of /0 = %d, want 0", n)
	}
}

func TestGroups(t *testing.T) {
	tcp := func(p uint16) policy.Port { return policy.Port{Protocol: datapath.TCP, Port: p} }
	udp := func(p uint16) policy.Port { return policy.Port{Protocol: datapath.UDP, Port: p} }
	var many []policy.Port
	for i := 1; i <= 16; i++ {
		many = append(many, tcp(uint16(i)))
	}
	for _, c := range []struct {
		in   []policy.Port
		max  int
		want string
	}{
		{nil, 15, "[{ []}]"},
		{[]policy.Port{tcp(80), {}}, 15, "[{ []}]"},
		{[]policy.Port{udp(53), tcp(443), tcp(80), tcp(80)}, 15, "[{tcp [80 443]} {udp [53]}]"},
		{[]policy.Port{tcp(80), tcp(0)}, 15, "[{tcp []}]"},
		{many, 15, "[{tcp [1 2 3 4 5 6 7 8 9 10 11 12 13 14 15]} {tcp [16]}]"},
		{many, 0, "[{tcp [1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16]}]"},
	} {
		if got := fmt.Sprint(Groups(c.in, c.max)); got != c.want {
			t.Errorf("Groups(%v, %d) = %s, want %s", c.in, c.max, got, c.want)
		}
	}
}

func TestCount(t *testing.T) {
	r := policy.Rule{Peers: pfx("10.0.0.0/8", "10.1.0.0/16"), Ports: []policy.Port{{Protocol: datapath.TCP, Port: 80}, {Protocol: datapath.UDP, Port: 53}}}
	spec := policy.Spec{Pods: []policy.PodPolicy{
		{Pod: "a", Ingress: []policy.Rule{r}, Egress: []policy.Rule{}},
		{Pod: "b"}, // nothing selected
	}}
	got := Count(spec, 15)
	want := Totals{Pods: 1, Rules: 1, Peers: 2, Elements: 0, PodChains: 2, PodChainRules: 4} // 10/8 inline
	if got != want {
		t.Fatalf("Count = %+v, want %+v", got, want)
	}
	spec.Pods[0].Ingress[0].Peers = pfx("10.0.0.0/8", "192.168.0.0/16")
	got = Count(spec, 15)
	want.Peers, want.Elements = 2, 2
	if got != want {
		t.Fatalf("Count = %+v, want %+v", got, want)
	}
}

type sameNamer struct{}

func (sameNamer) Chain(string, Dir) string    { return "c" }
func (sameNamer) Set(string, Dir, int) string { return "s" }

func TestEachChainRefusesCollisions(t *testing.T) {
	spec := policy.Spec{Pods: []policy.PodPolicy{{Pod: "a", Ingress: []policy.Rule{}}, {Pod: "b", Ingress: []policy.Rule{}}}}
	n := 0
	_, err := EachChain(spec, sameNamer{}, func(policy.PodPolicy, Dir, string) error { n++; return nil })
	if err == nil || n != 1 {
		t.Fatalf("two pods on one chain name: %v after %d calls", err, n)
	}
}
