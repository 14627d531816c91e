package report

import (
	"strings"
	"testing"

	"github.com/cnibench/cnibench/results"
)

// A column that adds parts to another column's scenario is compared with
// it; every other column with the first; other runs' columns never.
func TestSetAgainst(t *testing.T) {
	cols := []Column{
		{Label: "ebpf", Scenario: "ebpf"},
		{Label: "ebpf+policy", Scenario: "ebpf+policy"},
		{Label: "iptables", Scenario: "iptables"},
		{Label: "iptables+policy", Scenario: "iptables+policy"},
		{Label: "vxlan+iptables+policy", Scenario: "vxlan+iptables+policy"},
		{Label: "r2/iptables+flows", Scenario: "iptables+flows", Run: 1},
	}
	for i := range cols {
		cols[i].parts = results.Scenario{Name: cols[i].Scenario}.ScenarioName()
	}
	setAgainst(cols)
	want := []int{0, 0, 0, 2, 3, 0}
	adds := []string{"", "policy", "", "policy", "vxlan", ""}
	for i, c := range cols {
		if c.Against != want[i] || c.Adds != adds[i] {
			t.Errorf("%s compared with column %d adding %q, want %d adding %q", c.Label, c.Against, c.Adds, want[i], adds[i])
		}
	}
	if got := vsLabel(cols, 3); got != "iptables+policy vs iptables" {
		t.Errorf("header %q", got)
	}
	if !anyAgainst(cols) || anyAgainst(cols[:1]) {
		t.Error("anyAgainst")
	}
}

// Built from results, an overhead column's verdicts are against its own
// baseline and it gets answer lines of its own.
func TestOverheadColumnsInReport(t *testing.T) {
	run := loadFixture(t)
	if len(run.Scenarios) < 2 {
		t.Skip("fixture has one scenario")
	}
	// Rename the fixture's scenarios into base and base+feature.
	base := run.Scenarios[0].Name
	for i := range run.Results {
		if run.Results[i].Scenario != base {
			run.Results[i].Scenario = base + "+policy"
		}
	}
	for i := range run.Scenarios[1:] {
		run.Scenarios[i+1].Name = base + "+policy"
	}
	rep, err := Build([]Input{{Run: run}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(rep.Baseline, "compared with that one") {
		t.Errorf("baseline %q does not say how overhead columns are compared", rep.Baseline)
	}
	found := false
	for _, a := range rep.Answers {
		if strings.Contains(a.Text, base+"+policy vs "+base+": ") {
			found = true
		}
	}
	if !found {
		t.Errorf("no overhead answer line among %+v", rep.Answers)
	}
	for _, a := range rep.Answers {
		if !strings.Contains(a.Text, " vs "+base+": ") {
			t.Errorf("a pure overhead comparison still names a winner: %q", a.Text)
		}
	}
}

// In a run with overhead columns the winner cells hold each column's
// verdict against its baseline, and no p-value of a winner joins the
// false-discovery family.
func TestOverheadVerdictCells(t *testing.T) {
	run := loadFixture(t)
	base := run.Scenarios[0].Name
	for i := range run.Results {
		if run.Results[i].Scenario != base {
			run.Results[i].Scenario = base + "+flows"
		}
	}
	for i := range run.Scenarios[1:] {
		run.Scenarios[i+1].Name = base + "+flows"
	}
	rep, err := Build([]Input{{Run: run}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Glance) == 0 {
		t.Fatal("no glance rows")
	}
	for _, g := range rep.Glance {
		if g.Winner == nil || (g.VsBaseline[1] != nil && !strings.HasPrefix(g.Winner.Text, base+"+flows vs "+base+": ")) {
			t.Errorf("%s %s %s: winner cell %+v, want the overhead verdict", g.Test, g.Placement, g.Metric, g.Winner)
		}
		if g.Winner != nil && g.Winner.Label != "" {
			t.Errorf("%s %s: a winner is named (%s) in an overhead run", g.Test, g.Metric, g.Winner.Label)
		}
	}
	if winnerHead(rep.Columns) != "Verdicts (each vs its baseline)" {
		t.Errorf("head %q", winnerHead(rep.Columns))
	}
}
