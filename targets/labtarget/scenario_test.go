package labtarget

import (
	"slices"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/datapath"
	"github.com/cnibench/cnibench/lab"
	"github.com/cnibench/cnibench/results"
	"github.com/cnibench/cnibench/targets/labtarget/part"
)

// configure parses name as the CLI does and configures it on base.
func configure(name string, base lab.Config) (part.Scenario, error) {
	n, err := results.ParseScenarioName(name)
	if err != nil {
		return part.Scenario{}, err
	}
	return ScenarioConfig(n, base)
}

// partNames are a scenario's parts of a phase, by name.
func partNames(s part.Scenario, ph part.Phase) []string {
	var out []string
	for _, p := range s.Parts {
		if p.Phase() == ph {
			out = append(out, p.Name())
		}
	}
	return out
}

func TestScenarioConfigs(t *testing.T) {
	base := lab.Config{Nodes: 2, PodsPerNode: 2}
	sc, err := configure("VXLAN+ebpf", base)
	if err != nil || sc.Lab.Routing != lab.RoutingVXLAN || sc.Lab.ServiceDatapath != "ebpf" || sc.Lab.Name != "vxlanebpf" {
		t.Fatalf("vxlan+ebpf: %+v %v", sc, err)
	}
	// Every routing × Service datapath combination makes a valid lab name.
	for _, r := range []string{"native", "vxlan"} {
		for _, d := range datapath.Names() {
			if _, err := configure(r+"+"+d, base); err != nil {
				t.Errorf("%s+%s: %v", r, d, err)
			}
			if sc, err := configure(r+"+"+d+"+policy", base); err != nil || !sc.Has("policy") {
				t.Errorf("%s+%s+policy: %+v %v", r, d, sc, err)
			}
		}
	}
	for bad, want := range map[string]string{"native+bogus": `unknown scenario "bogus"`, "iptables+ebpf": "iptables and ebpf are both Service datapaths: choose one",
		"native+vxlan": "native and vxlan are both routings", "ebpf+l7-node+l7-sidecar": "L7 models", "iptables+policy+l7-node": "policy with l7-node"} {
		if _, err := configure(bad, base); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", bad, err, want)
		}
	}
	if _, err := configure("iptables+policy+l7-sidecar", base); err != nil {
		t.Errorf("policy with sidecars: %v", err)
	}
	// Policy-scale parts: N rules per pod, named back the same, a short
	// lab-name token.
	for name, want := range map[string]struct{ part, lab string }{
		"iptables+policy-1000": {"policy-1000", "iptp1k"}, "ebpf+policy-10k": {"policy-10k", "ebpfp10k"}, "nftables+policy-250": {"policy-250", "nftp250"}} {
		sc, err := configure(name, base)
		if err != nil || !slices.Equal(partNames(sc, part.Policy), []string{want.part}) || sc.Lab.Name != want.lab {
			t.Errorf("%s: %v %+v %v, want %s in lab %s", name, partNames(sc, part.Policy), sc.Lab, err, want.part, want.lab)
		}
	}
	for _, bad := range []string{"ebpf+policy-0", "ebpf+policy-x", "ebpf+policy-40k", "ebpf+policy+policy-10", "ebpf+policy-10+l7-node"} {
		if _, err := configure(bad, base); err == nil || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want a one-line error", bad, err)
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
		"ebpf-tc+socklb-off":      "goes with ebpf only",
		"wireguard+mtu-9000":      "mtu-N with wireguard",
		"iptables+flows+notrack":  "notrack with flows on a netfilter datapath",
	} {
		if _, err := configure(scenario, base); err == nil || !strings.Contains(err.Error(), want) {
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
		sc, err := configure(scenario, base)
		if got := partNames(sc, part.Tuning); err != nil || !slices.Equal(got, tunings) {
			t.Errorf("%s: tuning %q (%v), want %q", scenario, got, err, tunings)
		}
	}
	// socklb-off, in any order, is the eBPF datapath translating per
	// packet at tc, in a lab of its own.
	for _, scenario := range []string{"ebpf+socklb-off", "socklb-off+ebpf"} {
		sc, err := configure(scenario, base)
		if err != nil || sc.Lab.ServiceDatapath != "ebpf-tc" || sc.Lab.Name != strings.ReplaceAll(strings.ReplaceAll(scenario, "socklb-off", "nsl"), "+", "") {
			t.Errorf("%s: %q in lab %q (%v), want ebpf-tc", scenario, sc.Lab.ServiceDatapath, sc.Lab.Name, err)
		}
	}
	// The run's flags count as much as the scenario's parts.
	withFlags := lab.Config{Nodes: 2, PodsPerNode: 2, Encryption: lab.EncryptionWireGuard}
	if _, err := configure("vxlan+mtu-9000", withFlags); err == nil || !strings.Contains(err.Error(), "mtu-N with wireguard") {
		t.Errorf("--encryption wireguard with vxlan+mtu-9000: %v", err)
	}
	ebpfFlag := lab.Config{Nodes: 2, PodsPerNode: 2, ServiceDatapath: "ebpf"}
	if sc, err := configure("policy+notrack", ebpfFlag); err != nil || !slices.Equal(partNames(sc, part.Tuning), []string{"notrack"}) {
		t.Errorf("--service-datapath ebpf with policy+notrack: %v", err)
	}
	if _, err := configure("cc-BBR!", base); err == nil || !strings.Contains(err.Error(), `unknown scenario "cc-bbr!"`) {
		t.Errorf("a bad congestion control name: %v", err)
	}
	// --encryption implies the wireguard part, which the run opens.
	if got := part.Implied(withFlags, nil); len(got) != 1 || got[0].Name() != "wireguard" {
		t.Errorf("implied by --encryption: %v", got)
	}
}
