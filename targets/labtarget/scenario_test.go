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
}
