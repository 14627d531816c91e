package labtarget

import (
	"testing"

	"github.com/cnibench/cnibench/datapath/ebpf"
	"github.com/cnibench/cnibench/lab"
)

const knownDatapaths = "iptables, iptables-legacy, nftables, nftables-flat, ebpf, ebpf-tc"

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
		"iptables+vxlan": "iptvxlan",
	} {
		cfg, err := ScenarioConfig(scenario, base)
		if err != nil || cfg.Name != want {
			t.Errorf("%s: lab %q (%v), want %q", scenario, cfg.Name, err, want)
		}
	}
	_, err := ScenarioConfig("vxlan+bogus", base)
	want := `unknown scenario "bogus" (known: ebpf, ebpf-tc, iptables, iptables-legacy, native, nftables, nftables-flat, vxlan; combine with +, e.g. vxlan+ebpf)`
	if err == nil || err.Error() != want {
		t.Errorf("vxlan+bogus: %v, want %q", err, want)
	}
}
