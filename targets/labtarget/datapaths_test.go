package labtarget

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/datapath"
	"github.com/cnibench/cnibench/datapath/ebpf"
	"github.com/cnibench/cnibench/lab"
	"github.com/cnibench/cnibench/lab/labtest"
	"github.com/cnibench/cnibench/suite"
)

// knownDatapaths is how errors list the datapaths; datapath/all's test
// pins the names and their order.
var knownDatapaths = strings.Join(datapath.Names(), ", ")

// A name the registry does not know, or a socket LB on a lab without
// cgroup v2, fails with the one-line errors the lab always gave, before
// any kernel object is made.
func TestOpenDatapathsRefuses(t *testing.T) {
	for _, c := range []struct{ name, want string }{
		{"bogus", "service datapath bogus: node0: unknown (known: " + knownDatapaths + ")"},
		{"IPTABLES", "service datapath IPTABLES: node0: unknown (known: " + knownDatapaths + ")"},
		{"ebpf", "service datapath ebpf: the socket load balancer attaches to the lab's cgroup, and this machine has no cgroup v2"},
	} {
		dps, err := OpenDatapathsWith(fakeLab(2, 1), c.name, ebpf.Options{})
		if dps != nil || err == nil || err.Error() != c.want {
			t.Errorf("%s: %v, %v, want %q", c.name, dps, err, c.want)
		}
	}
	cfg := lab.Config{Nodes: 1, PodsPerNode: 1, StateDir: t.TempDir(), ServiceDatapath: "bogus"}
	if err := cfg.Validate(); err == nil || err.Error() != `lab config: service datapath "bogus" unknown (known: `+knownDatapaths+")" {
		t.Errorf("lab config: %v", err)
	}
}

// Scenario names become the lab names they always did, and an unknown
// part lists every scenario.
func TestScenarioLabNames(t *testing.T) {
	base := lab.Config{Nodes: 2, PodsPerNode: 2}
	for scenario, want := range map[string]string{
		"iptables": "ipt", "iptables-legacy": "iptl", "nftables": "nft", "nftables-flat": "nftf",
		"ebpf": "ebpf", "ebpf-tc": "ebpftc", "native": "native", "vxlan": "vxlan",
		"native+iptables-legacy": "nativeiptl", "vxlan+nftables-flat": "vxlannftf", "VXLAN+EBPF-TC": "vxlanebpftc",
		"iptables+vxlan": "iptvxlan", "nftables+policy": "nftpol",
		// Over 12 characters: 8 kept and 4 hex digits of a hash.
		"vxlan+ebpf-tc+policy": "vxlanebpe08f",
		// Tunings by their tokens.
		"native+cc-bbr": "nativebbr", "ebpf+gro-off": "ebpfngro", "ebpf+notrack": "ebpfntr", "native+busy-poll": "nativebpol", "native+mtu-9000": "nativem9000", "vxlan+wireguard": "vxlanwg", "iptables+ambient": "iptamb", "iptables+ambient+waypoint": "iptambwp",
	} {
		sc, err := configure(scenario, base)
		if err != nil || sc.Lab.Name != want {
			t.Errorf("%s: lab %q (%v), want %q", scenario, sc.Lab.Name, err, want)
		}
	}
	_, err := configure("vxlan+bogus", base)
	want := `scenario "vxlan+bogus": unknown scenario "bogus" (known: ambient, busy-poll, cc-ALGO, churn, ebpf, ebpf-tc, flows, gro-off, gro-on, gso-off, gso-on, iptables, iptables-legacy, l7-egress, l7-node, l7-sidecar, mtu-N, native, nftables, nftables-flat, node-rps, notrack, policy, policy-N, socklb-off, vxlan, waypoint, wireguard; combine with +, e.g. vxlan+ebpf)`
	if err == nil || err.Error() != want {
		t.Errorf("vxlan+bogus: %v, want %q", err, want)
	}
}

// Every registered datapath opens in a real lab where its registration
// says (once per node, or once on the lab's cgroup) and holds the test
// Service of pod-to-service/other-node once programmed.
func TestOpenEveryDatapath(t *testing.T) {
	l := labtest.NewLab(t, "cnbod")
	svcs, err := placementServices(l, []string{suite.PodToServiceOtherNode}, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range datapath.Names() {
		t.Run(name, func(t *testing.T) {
			dps, err := OpenDatapathsWith(l, name, ebpf.Options{})
			if errors.Is(err, datapath.ErrUnsupported) {
				t.Skipf("unsupported here: %v", err)
			}
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				for _, d := range dps {
					if err := d.Close(); err != nil {
						t.Errorf("close: %v", err)
					}
				}
			}()
			v, _ := datapath.Lookup(name)
			if want := map[datapath.Scope]int{datapath.PerNode: len(l.Nodes), datapath.PerLab: 1}[v.Scope]; len(dps) != want {
				t.Fatalf("%d instances, want %d", len(dps), want)
			}
			for _, d := range dps {
				if d.Name() != name {
					t.Errorf("an instance is called %q", d.Name())
				}
			}
			dp, err := labDatapath(l, dps)
			if err == nil {
				_, err = ProgramAndVerify(context.Background(), dp, datapath.Spec{Services: svcs})
			}
			if err != nil {
				t.Fatal(err)
			}
		})
	}
	// The eBPF options reach the eBPF constructors.
	for _, name := range []string{ebpf.NameSocket, ebpf.NameTC} {
		dps, err := OpenDatapathsWith(l, name, ebpf.Options{LBMapMax: -1})
		for _, d := range dps {
			_ = d.Close()
		}
		if err == nil || !strings.Contains(err.Error(), "lb_map_max must be") {
			t.Errorf("%s with lb_map_max -1: %v", name, err)
		}
	}
}
