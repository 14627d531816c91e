package ebpf

import (
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/cnibench/cnibench/datapath"
	"github.com/cnibench/cnibench/internal/netnsx"
	"github.com/cnibench/cnibench/lab/labtest"
	"github.com/cnibench/cnibench/lab/policy"
)

// scaleSite is a scratch namespace with one veth, cnbp0, standing for a
// pod's host veth (no traffic: only the maps and hooks are measured).
func scaleSite(t *testing.T) policy.Site {
	t.Helper()
	ns := labtest.ScratchNS(t, "pol")
	h, err := netnsx.NewHandle(ns)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if err := h.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "cnbp0"}, PeerName: "cnbq0"}); err != nil {
		t.Fatal(err)
	}
	return policy.Site{Netns: ns, Node: "node0", Prefix: "cnb-c1-"}
}

func scalePod(ingress []policy.Rule) policy.Spec {
	return policy.Spec{Pods: []policy.PodPolicy{{Pod: "node0-pod0", Node: "node0", IP: netip.MustParseAddr("198.19.0.10"), HostIface: "cnbp0", Ingress: ingress}}}
}

// TestScale programs 10 .. 10,000 rules of one peer each on a pod (the
// steps of a policy-scale sweep, each replacing the last; then each from
// none), and then one
// rule of 10,000 peers, verifying each, and logs the programming and
// Verify times (the figures of the sweep's eBPF curve).
func TestScale(t *testing.T) {
	e := openT(t, scaleSite(t))
	port := policy.Port{Protocol: datapath.TCP, Port: 80}
	step := func(what string, spec policy.Spec) {
		t.Helper()
		st, err := e.Program(t.Context(), spec)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		start := time.Now()
		got, err := e.Verify(t.Context())
		verify := time.Since(start)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if err := got.Holds(e.Expected(spec)); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		t.Logf("%-24s program %8.2f ms (generate %6.2f, apply %7.2f), verify %7.2f ms; %d map entries", what,
			ms(st.Generate+st.Apply), ms(st.Generate), ms(st.Apply), ms(verify), got.MapEntries)
		if st.Generate+st.Apply > 10*time.Second {
			t.Errorf("%s: programming took %v", what, st.Generate+st.Apply)
		}
	}
	steps := []int{10, 100, 1000, 10000}
	for _, n := range steps { // a sweep: each step replaces the last
		rules, err := policy.ScaleRules(n, port)
		if err != nil {
			t.Fatal(err)
		}
		step(fmt.Sprintf("%d rules", n), scalePod(rules))
	}
	for _, n := range steps { // each from a selected pod without rules
		rules, _ := policy.ScaleRules(n, port)
		step("0 rules", scalePod([]policy.Rule{}))
		step(fmt.Sprintf("%d rules from 0", n), scalePod(rules))
	}
	peers, err := policy.ScalePeers(10000)
	if err != nil {
		t.Fatal(err)
	}
	step("1 rule of 10000 peers", scalePod([]policy.Rule{{Peers: peers, Ports: []policy.Port{port}}}))
	step("empty", policy.Spec{})
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
