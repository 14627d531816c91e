package report

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/engine/engineapi"
	"github.com/cnibench/cnibench/engine/kinds"
	"github.com/cnibench/cnibench/results"
	"github.com/cnibench/cnibench/stats"
)

// pairsRun is a run of TCP_RR with 3 pairs over 2 rounds: pairs 0 and 1
// at 1,000/s, pair 2 at 500/s and 700/s (it lags: its median, 600, is
// below 0.8 × 1,000).
func pairsRun(t *testing.T) *results.Run {
	t.Helper()
	t0 := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	rr := func(rate float64) *engineapi.Result {
		return &engineapi.Result{Test: engineapi.TCPRR, Streams: 1, Transactions: int64(rate), RatePerSec: rate,
			Latency: &stats.Latency{Count: int64(rate), P50Us: 50, P99Us: 90}, RunnerResults: kinds.RunnerResults{Start: t0, End: t0.Add(time.Second), Seconds: 1}}
	}
	pl := results.Placement{Path: "pod-to-pod", Node: "other-node", Client: "node0-pod0", Server: "node1-pod0", ServerAddr: "198.19.1.10"}
	res := results.Result{Scenario: "lab", Test: "TCP_RR", Placement: pl, Pairs: []results.Placement{pl, pl, pl}}
	for round, slow := range []float64{500, 700} {
		s := results.Sample{Round: round + 1, Start: t0, End: t0.Add(time.Second), Result: rr(2000 + slow)}
		for i, rate := range []float64{1000, 1000, slow} {
			s.Pairs = append(s.Pairs, results.PairSample{Pair: i, Client: "c", Server: "s", Start: t0, End: t0.Add(time.Second), Result: rr(rate)})
		}
		res.Samples = append(res.Samples, s)
	}
	return &results.Run{SchemaVersion: results.SchemaVersion, RunID: "pairs", Status: results.StatusComplete, Start: t0, End: t0.Add(time.Minute),
		Scenarios: []results.Scenario{{Name: "lab", Target: results.Target{Kind: "lab"}}},
		Plan:      results.Plan{Profile: "quick", Tests: []string{"TCP_RR"}, Placements: []string{pl.Name()}, Rounds: 2, Pairs: 3},
		Results:   []results.Result{res}}
}

// The pairs section shows the aggregate, the spread across pairs and the
// lagging pair, in Markdown and HTML, and keeps its model in report.json.
func TestPairsSection(t *testing.T) {
	rep, err := Build([]Input{{Run: pairsRun(t)}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	rows := pairsRows(rep)
	if len(rows) != 1 {
		t.Fatalf("rows %+v", rows)
	}
	r := rows[0]
	if r.Aggregate != 2600 || r.Min != 600 || r.Median != 1000 || r.Max != 1000 || len(r.Lagging) != 1 || r.Lagging[0] != 2 || r.Metric != kinds.MetricRate {
		t.Errorf("row %+v", r)
	}
	if len(r.RoundMedians) != 2 || r.RoundMedians[0] != 1000 {
		t.Errorf("round medians %v", r.RoundMedians)
	}
	out := renderMDHTML(t, rep)
	for format, want := range map[string][]string{
		"md":   {"\n\n## Pairs\n\n", "| lab | TCP_RR | pod-to-pod/other-node | rate (trans/s) | 3 | 2,600 | 600 | 1,000 | 1,000 | 1,000 / 1,000 | pair 2 (600) |\n\n## "},
		"html": {`<h2 id="pairs">Pairs</h2>`, `<td class="num">2,600</td>`, "<td>pair 2 (600)</td>"},
	} {
		for _, w := range want {
			if !strings.Contains(out[format], w) {
				t.Errorf("%s: %q missing", format, w)
			}
		}
	}
	if b, err := json.Marshal(rep.Extra["pairs"]); err != nil || !strings.Contains(string(b), `"lagging":[2]`) {
		t.Errorf("report.json model %s %v", b, err)
	}
}

// A run of one pair has no pairs section and nothing new in report.json.
func TestNoPairsSectionForOnePair(t *testing.T) {
	rep := buildFixture(t)
	out := renderMDHTML(t, rep)
	if _, ok := rep.Extra["pairs"]; ok || strings.Contains(out["md"], "## Pairs") || strings.Contains(out["html"], `id="pairs"`) {
		t.Error("a pairs section for one pair")
	}
}

// The lag rule in both directions.
func TestLagging(t *testing.T) {
	if got := lagging([]float64{100, 100, 79}, false); len(got) != 1 || got[0] != 2 {
		t.Errorf("higher is better: %v", got)
	}
	if got := lagging([]float64{100, 100, 81}, false); len(got) != 0 {
		t.Errorf("81%% is not a lag: %v", got)
	}
	if got := lagging([]float64{10, 10, 13}, true); len(got) != 1 || got[0] != 2 {
		t.Errorf("lower is better: %v", got)
	}
}
