package report

import (
	"strings"
	"testing"

	"github.com/cnibench/cnibench/results"
)

// A step verdict the false-discovery control demotes reads the same in
// the findings as in the table: a -60% step at 10,000 Services once read
// "(significant)" in the words and "within noise" in the cell.
func TestServiceScaleFindingsAfterControl(t *testing.T) {
	run := scaleFixtureRun(t)
	// eBPF alone, flat but for its last step: every round of it below
	// step 0's, significant alone (p ≈ 0.02), not among the run's other
	// comparisons, none of which differs.
	run.Scenarios, run.Sweeps = run.Scenarios[1:2], run.Sweeps[1:2]
	var kept []results.Result
	for _, r := range run.Results {
		if r.Scenario != "ebpf" {
			continue
		}
		if r.Test == "HTTP_RPS_SHORT_C64" && r.Services == 10000 {
			r.Samples = httpSamples(t, []float64{4100, 4300, 7800, 4000, 4200}, spread(64e6/4100), 0, 0, 0)
		}
		kept = append(kept, r)
	}
	run.Results = kept
	rep, err := Build([]Input{{Run: run}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	d := rep.ServiceScale.Datapaths[0]
	m := d.Steps[len(d.Steps)-1].metricNamed("short-connection RPS")
	if m == nil || m.VsStep0 == nil || m.VsStep0.Verdict != VerdictDemoted {
		t.Fatalf("the fixture no longer demotes the step (verdict %+v): change its samples", m.VsStep0)
	}
	want := "ebpf short-connection RPS at 10,000 Services is"
	for _, f := range rep.ServiceScale.Findings {
		if strings.HasPrefix(f, want) {
			if !strings.Contains(f, "("+VerdictDemoted+")") {
				t.Errorf("finding %q: want the table's verdict %q", f, VerdictDemoted)
			}
			return
		}
	}
	t.Errorf("no finding %q in %q", want, rep.ServiceScale.Findings)
}
