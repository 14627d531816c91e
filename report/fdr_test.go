package report

import (
	"strings"
	"testing"

	"github.com/cnibench/cnibench/engine/engineapi"
	"github.com/cnibench/cnibench/results"
)

// Verdicts significant alone but no discovery of the report's family are
// demoted, with a text that says why; the sentence counts them.
func TestControlFDR(t *testing.T) {
	sig := func(p float64) *Delta {
		return &Delta{Verdict: VerdictSignificant, Better: true, P: Num(p), Text: "4.0% faster (significant, ...)"}
	}
	row := Row{Metric: "rate", VsBaseline: []*Delta{nil, sig(0.0001), sig(0.02), sig(0.02)},
		Winner: &Winner{Verdict: VerdictSignificant, Label: "b", Best: "b", RunnerUp: "a", P: 0.02}}
	rows := []Row{row}
	for range 15 {
		rows = append(rows, Row{Metric: "other", VsBaseline: []*Delta{nil, {Verdict: VerdictNoise, P: 0.5}}})
	}
	rep := &Report{Sections: []Section{{Test: "TCP_RR", Metrics: rows}}}
	controlFDR(rep, nil)
	f := rep.FDR
	if f.Comparisons != 19 || f.Significant != 1 || f.Demoted != 3 {
		t.Fatalf("fdr %+v", f)
	}
	if d := row.VsBaseline[1]; d.Verdict != VerdictSignificant || !d.Better {
		t.Errorf("the discovery was demoted: %+v", d)
	}
	if d := row.VsBaseline[2]; d.Verdict != VerdictDemoted || d.Better || !strings.Contains(d.Text, "19 comparisons are held to a 5% false-discovery rate (p = 0.02)") {
		t.Errorf("not demoted: %+v", d)
	}
	if w := row.Winner; w.Verdict != VerdictDemoted || w.Label != "" || !strings.HasPrefix(w.Text, "b vs a: b ") || !strings.Contains(w.Text, "not significant once") {
		t.Errorf("winner not demoted: %+v", w)
	}
	if s := f.Sentence(); !strings.Contains(s, "19 comparisons judged; 1 significant") || !strings.Contains(s, "3 more looked significant alone") {
		t.Errorf("sentence %q", s)
	}
}

// Heavy UDP loss of an unpaced sender is explained, a paced one's is not.
func TestUnpacedUDPExplained(t *testing.T) {
	s := &results.Series{Metrics: []results.Metric{{Name: results.MetricLoss, Display: 40}}}
	o := &engineapi.Options{Test: engineapi.UDPStream}
	r := results.Result{Test: "UDP_STREAM", Options: o}
	if w := unpacedUDP(r, s); !strings.Contains(w, "40.0% UDP loss with an unpaced sender") {
		t.Errorf("unpaced: %q", w)
	}
	o.RateBitsPerSec = 1e9
	if w := unpacedUDP(r, s); w != "" {
		t.Errorf("paced: %q", w)
	}
}

// A busy hypervisor and a loaded machine are warned about at the top.
func TestHostWarnings(t *testing.T) {
	run := fixtureRun(t)
	run.Environment.CPUCount = 2
	for i := range run.Results {
		for j := range run.Results[i].Samples {
			run.Results[i].Samples[j].Host = &results.HostLoad{StealPct: 1, Load1: 1.5}
		}
	}
	run.Results[0].Samples[0].Host = &results.HostLoad{StealPct: 12, Load1: 6}
	rep, err := Build([]Input{{Run: run, Label: "r"}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	all := strings.Join(rep.Warnings, "\n")
	for _, want := range []string{"run r: the hypervisor took over 5% of CPU time (steal) in 1 of", "up to 12%",
		"run r: the load average exceeded twice the 2 CPUs in 1 of", "inconclusive (their intervals reach beyond ±10%"} {
		if !strings.Contains(all, want) {
			t.Errorf("warnings lack %q:\n%s", want, all)
		}
	}
}
