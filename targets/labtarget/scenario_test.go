package labtarget

import (
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
