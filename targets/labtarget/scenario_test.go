package labtarget

import (
	"slices"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/datapath"
	"github.com/cnibench/cnibench/lab"
)

func TestScenarioConfigs(t *testing.T) {
	base := lab.Config{Nodes: 2, PodsPerNode: 2}
	cfg, err := ScenarioConfig("VXLAN+ebpf", base)
	if err != nil || cfg.Routing != lab.RoutingVXLAN || cfg.ServiceDatapath != "ebpf" || cfg.Name != "vxlanebpf" {
		t.Fatalf("vxlan+ebpf: %+v %v", cfg, err)
	}
	// Every routing × Service datapath combination makes a valid lab name.
	for _, r := range []string{"native", "vxlan"} {
		for _, d := range datapath.Names() {
			if _, err := ScenarioConfig(r+"+"+d, base); err != nil {
				t.Errorf("%s+%s: %v", r, d, err)
			}
			if cfg, err := ScenarioConfig(r+"+"+d+"+policy", base); err != nil || !cfg.Policy {
				t.Errorf("%s+%s+policy: %+v %v", r, d, cfg, err)
			}
		}
	}
	if _, err := ScenarioConfig("native+bogus", base); err == nil {
		t.Fatal("unknown scenario part accepted")
	}
	for _, bad := range []string{"ebpf+l7-node+l7-sidecar", "iptables+policy+l7-node"} {
		if _, err := ScenarioConfig(bad, base); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
	if _, err := ScenarioConfig("iptables+policy+l7-sidecar", base); err != nil {
		t.Errorf("policy with sidecars: %v", err)
	}
	// Policy-scale parts: N rules per pod, a short lab-name token.
	for name, want := range map[string]struct {
		rules int
		lab   string
	}{"iptables+policy-1000": {1000, "iptp1k"}, "ebpf+policy-10k": {10000, "ebpfp10k"}, "nftables+policy-250": {250, "nftp250"}} {
		cfg, err := ScenarioConfig(name, base)
		if err != nil || !cfg.Policy || cfg.PolicyRules != want.rules || cfg.Name != want.lab {
			t.Errorf("%s: %+v %v, want %d rules in lab %s", name, cfg, err, want.rules, want.lab)
		}
	}
	for _, bad := range []string{"ebpf+policy-0", "ebpf+policy-x", "ebpf+policy-40k", "ebpf+policy+policy-10", "ebpf+policy-10+l7-node"} {
		if _, err := ScenarioConfig(bad, base); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

// Parts that cannot go together are refused with the reason: two L7
// models, policy twice, policy with the per-node proxy, and notrack with
// what needs conntrack in the nodes.
func TestScenarioConflicts(t *testing.T) {
	base := lab.Config{Nodes: 2, PodsPerNode: 2}
	for scenario, want := range map[string]string{
		"l7-node+l7-sidecar":      "L7 models: choose one",
		"l7-egress+l7-node":       "L7 models: choose one",
		"policy+l7-egress":        "policy with l7-node or l7-egress",
		"policy+policy-1000":      "the same feature",
		"ebpf+policy+l7-node":     "policy with l7-node or l7-egress is not supported",
		"ebpf+l7-node+notrack":    "notrack with l7-node",
		"iptables+policy+notrack": "notrack with policy on a netfilter datapath",
		"policy-10+notrack":       "notrack with policy on a netfilter datapath",
		"iptables+socklb-off":     "goes with ebpf only",
		"socklb-off":              "goes with ebpf only",
		"wireguard+mtu-9000":      "mtu-N with wireguard",
		"iptables+flows+notrack":  "notrack with flows on a netfilter datapath",
	} {
		if _, err := ScenarioConfig(scenario, base); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", scenario, err, want)
		}
	}
	// What works: notrack with the eBPF enforcer, sidecars, tunings
	// stacked in the order given.
	for scenario, tunings := range map[string][]string{
		"ebpf+policy+notrack":           {"notrack"},
		"iptables+l7-sidecar+notrack":   {"notrack"},
		"native+cc-bbr+gro-off+gso-off": {"cc-bbr", "gro-off", "gso-off"},
		"vxlan+mtu-9000":                {"mtu-9000"},
	} {
		cfg, err := ScenarioConfig(scenario, base)
		if err != nil || !slices.Equal(cfg.Tuning, tunings) {
			t.Errorf("%s: tuning %q (%v), want %q", scenario, cfg.Tuning, err, tunings)
		}
	}
	// socklb-off, in any order, is the eBPF datapath translating per
	// packet at tc, in a lab of its own.
	for _, scenario := range []string{"ebpf+socklb-off", "socklb-off+ebpf"} {
		cfg, err := ScenarioConfig(scenario, base)
		if err != nil || cfg.ServiceDatapath != "ebpf-tc" || cfg.Name != strings.ReplaceAll(strings.ReplaceAll(scenario, "socklb-off", "nsl"), "+", "") {
			t.Errorf("%s: %q in lab %q (%v), want ebpf-tc", scenario, cfg.ServiceDatapath, cfg.Name, err)
		}
	}
	// The run's flags count as much as the scenario's parts.
	withFlags := lab.Config{Nodes: 2, PodsPerNode: 2, Encryption: lab.EncryptionWireGuard}
	if _, err := ScenarioConfig("vxlan+mtu-9000", withFlags); err == nil || !strings.Contains(err.Error(), "mtu-N with wireguard") {
		t.Errorf("--encryption wireguard with vxlan+mtu-9000: %v", err)
	}
	ebpfFlag := lab.Config{Nodes: 2, PodsPerNode: 2, ServiceDatapath: "ebpf"}
	if cfg, err := ScenarioConfig("policy+notrack", ebpfFlag); err != nil || !slices.Equal(cfg.Tuning, []string{"notrack"}) {
		t.Errorf("--service-datapath ebpf with policy+notrack: %v", err)
	}
	if _, err := ScenarioConfig("cc-BBR!", base); err == nil || !strings.Contains(err.Error(), `unknown scenario "cc-bbr!"`) {
		t.Errorf("a bad congestion control name: %v", err)
	}
}
