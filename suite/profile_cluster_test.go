package suite

import (
	"strings"
	"testing"
)

// On a cluster kube-proxy iptables fills TKE's iptables column; the other
// columns say what they need, and no question between columns is asked.
func TestOnClusterFillsTheClusterColumn(t *testing.T) {
	plan, err := Options{Profile: "tke"}.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	before := len(plan.Reproduces.Cells)
	if err := OnCluster(plan, "iptables", "kube-proxy iptables, bridge natively routed"); err != nil {
		t.Fatal(err)
	}
	if len(plan.Reproduces.Cells) != before || len(plan.Questions) != 0 || plan.ScenarioTests != nil {
		t.Fatalf("%d cells (want %d), %d questions (want 0), scenario tests %v (want none: one scenario)",
			len(plan.Reproduces.Cells), before, len(plan.Questions), plan.ScenarioTests)
	}
	measured := 0
	for _, c := range plan.Reproduces.Cells {
		switch {
		case strings.HasPrefix(c.Row, "Service scale") || strings.HasPrefix(c.Row, "BPF map memory"):
			// Rows at scale: run sweeps them on the lab only.
			if c.Test != "" || !strings.Contains(c.NoEquivalent, "which run sweeps on the lab only: on a cluster, cnibench sweep --target k8s --profile tke") {
				t.Errorf("%s/%s on a cluster: %+v", c.Row, c.Column, c)
			}
		case strings.HasSuffix(c.Row, " overhead") && c.Column != "iptables":
			// An added part: the security profile's twins on a cluster.
			if c.Test != "" || !strings.Contains(c.NoEquivalent, "--profile security measures what it costs, as twins") {
				t.Errorf("%s/%s on a cluster: %+v", c.Row, c.Column, c)
			}
		case c.Column == "iptables" && c.Test != "":
			measured++
			if c.Scenario != "" {
				t.Errorf("%s/%s: scenario %q, want the run's one", c.Row, c.Column, c.Scenario)
			}
		case c.Column == "Cilium native" && c.Test == "" && !strings.Contains(c.NoEquivalent, "no equivalent") &&
			!strings.Contains(c.NoEquivalent, "this cluster runs kube-proxy iptables, bridge natively routed, the report's iptables column; Cilium native needs a cluster whose datapath the lab's ebpf models"):
			t.Errorf("%s/%s: %q", c.Row, c.Column, c.NoEquivalent)
		case c.Column != "iptables" && c.Test != "":
			t.Errorf("%s/%s still measured on a cluster of another column", c.Row, c.Column)
		}
	}
	if measured != 7 {
		t.Errorf("%d iptables cells measured, want TKE's 7 rows", measured)
	}
	// The profile itself is untouched: the next run starts from it.
	if prof, _ := LookupProfile("tke"); prof.Reproduces.Cells[0].Scenario != "iptables-legacy" {
		t.Errorf("the profile's own cells changed: %+v", prof.Reproduces.Cells[0])
	}
}

// A datapath no column models is refused in one line naming it and the
// columns.
func TestOnClusterRefusesAnotherDatapath(t *testing.T) {
	plan, err := Options{Profile: "tke"}.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	err = OnCluster(plan, "nftables", "kube-proxy nftables, bridge natively routed")
	want := "--profile tke on a cluster: its datapath (kube-proxy nftables, bridge natively routed, the lab's nftables) is none of the report's columns (iptables (iptables-legacy), Cilium native (ebpf), Cilium overlay (vxlan+ebpf))"
	if err == nil || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}
	// Profiles without OnCluster are left alone.
	plan, _ = Options{Profile: "connectivity-perf"}.Resolve()
	if err := OnCluster(plan, "", "anything"); err != nil {
		t.Errorf("connectivity-perf: %v", err)
	}
}
