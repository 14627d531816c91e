package report

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/datapath/churn"
	"github.com/cnibench/cnibench/engine/httpload/httpapi"
	"github.com/cnibench/cnibench/engine/kinds"
	"github.com/cnibench/cnibench/results"
	"github.com/cnibench/cnibench/stats"
)

// testdata/churn is a recorded lab churn run (iptables beside
// iptables+churn, 200 Services, 2 rounds of TCP_CRR).
func loadChurnFixture(t *testing.T) *results.Run {
	t.Helper()
	run, err := results.Load(filepath.Join(fixtureDir, "churn", results.FileName))
	if err != nil {
		t.Fatal(err)
	}
	return run
}

// The churn section pools every churned sample of a scenario: changes
// summed, latencies pooled into one distribution (not a median of
// per-sample p99s), the effects taken from the overhead columns' paired
// verdicts against the twin without churn.
func TestChurnAnalysis(t *testing.T) {
	run := loadChurnFixture(t)
	rep, err := Build([]Input{{Run: run}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Churn == nil || len(rep.Churn.Scenarios) != 1 {
		t.Fatalf("churn: %+v", rep.Churn)
	}
	c := rep.Churn.Scenarios[0]
	var lat []float64
	made, windows := 0, 0
	for _, res := range run.Results {
		for _, s := range res.Samples {
			if s.Churn != nil {
				lat = append(lat, s.Churn.LatenciesMs...)
				made += s.Churn.Made
				windows++
			}
		}
	}
	if c.Scenario != "iptables+churn" || c.Against != "iptables" || c.Datapath != "iptables" || !c.Partial || c.MinSync != "1s" {
		t.Errorf("head: %+v", c)
	}
	if c.Confirmed != windows || c.Windows != windows || c.Made != made || c.Held != made || c.Pending != 0 || windows != 2 {
		t.Errorf("windows %d made %d held %d pending %d; want %d windows, %d made and held", c.Windows, c.Made, c.Held, c.Pending, windows, made)
	}
	if !near(float64(c.P99Ms), stats.Quantile(lat, 0.99), 1e-9) || !near(float64(c.MaxMs), slices.Max(lat), 1e-9) || c.P50Ms > c.P99Ms {
		t.Errorf("latency p50 %v p99 %v max %v; pooled p99 %v max %v", c.P50Ms, c.P99Ms, c.MaxMs, stats.Quantile(lat, 0.99), slices.Max(lat))
	}
	if c.SyncCPUPerChange <= 0 || c.SyncsPerSec <= 0 || c.AchievedMin > c.AchievedMed || c.Requested != 10 {
		t.Errorf("sync CPU %v, syncs/s %v, achieved %v..%v of %v", c.SyncCPUPerChange, c.SyncsPerSec, c.AchievedMin, c.AchievedMed, c.Requested)
	}
	var metrics []string
	for _, e := range c.Effects {
		metrics = append(metrics, e.Test+" "+e.Metric)
		if e.Delta == nil || e.Delta.Verdict != VerdictTooFew || e.With <= 0 && e.Metric != "errors" {
			t.Errorf("%s %s: %+v (2 rounds: no verdict)", e.Test, e.Metric, e)
		}
	}
	if !slices.Contains(metrics, "TCP_CRR rate") || !slices.Contains(metrics, "TCP_CRR p99 latency") {
		t.Errorf("effects: %v", metrics)
	}
	md := markdownString(t, rep)
	for _, want := range []string{"## Churn", "iptables+churn (iptables, partial syncs, minimum interval 1s): ",
		"programming latency, change made → held by every node's kernel", "TCP_CRR rate: "} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	if h := string(htmlChurn(rep.Churn)); !strings.Contains(h, "<h2>Churn</h2>") || !strings.Contains(h, "iptables+churn") {
		t.Errorf("html: %s", h)
	}
	plain, err := Build([]Input{{Run: loadFixture(t)}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if plain.Churn != nil || strings.Contains(markdownString(t, plain), "## Churn") {
		t.Error("a run without churn has a churn section")
	}
}

func markdownString(t *testing.T, rep *Report) string {
	t.Helper()
	var b strings.Builder
	if err := Markdown(&b, rep); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// A churn on a cluster says what its numbers are: changes written to the
// API server, held as the node probes read the nodes, and cnibench's own
// CPU rather than a sync loop's.
func TestChurnOnClusterWording(t *testing.T) {
	run := loadChurnFixture(t)
	run.Target.Kind = "k8s"
	rep, err := Build([]Input{{Run: run}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := Markdown(&b, rep); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	for _, want := range []string{"changes written to the API server as they come, the nodes' proxy syncs on its own",
		"held by every node's datapath as its probe read it", "API writer (cnibench's own CPU", "as its node probe reads it"} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if strings.Contains(md, "every node's kernel") {
		t.Errorf("a cluster's churn report speaks of the lab's kernel read-back")
	}
}

// The timeline lays one round's churned HTTP sample beside its twin's,
// bucket by bucket, with each change at the time it was made (from the
// churn window's start to the measured interval's): the last round that
// has both; the HTML report draws it, the Markdown says its extremes.
func TestChurnTimeline(t *testing.T) {
	start := time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC)
	tl := func(reqs ...int64) *httpapi.Timeline {
		return &httpapi.Timeline{BucketMs: 250, Requests: reqs, Errors: make([]int64, len(reqs)), P99Ms: []float64{2, 2, 9, 2}}
	}
	sample := func(round int, t *httpapi.Timeline, c *churn.Result) results.Sample {
		return results.Sample{Round: round, Result: &httpapi.Result{RunnerResults: kinds.RunnerResults{Start: start.Add(time.Duration(round) * time.Minute)}, Timeline: t}, Churn: c}
	}
	ch := &churn.Result{Start: start.Add(2*time.Minute - 500*time.Millisecond), ChangesAtMs: []float64{100, 600, 1100, 2000}, LatenciesMs: []float64{900, 950, 1000, 800}}
	run := &results.Run{Results: []results.Result{
		{Scenario: "kp", Test: "HTTP_RPS_SHORT_C64", Samples: []results.Sample{sample(1, tl(100, 100, 100, 100), nil), sample(2, tl(100, 100, 100, 100), nil)}},
		{Scenario: "kp+churn", Test: "HTTP_RPS_SHORT_C64", Samples: []results.Sample{sample(1, nil, ch), sample(2, tl(100, 90, 40, 100), ch)}},
	}}
	got := churnTimeline(run, "kp+churn", "kp")
	if got == nil || got.Round != 2 || got.Test != "HTTP_RPS_SHORT_C64" {
		t.Fatalf("timeline %+v, want round 2 (round 1's churned sample has none)", got)
	}
	if !slices.Equal(got.RateWith, []float64{400, 360, 160, 400}) || !slices.Equal(got.RateNo, []float64{400, 400, 400, 400}) {
		t.Errorf("rates %v / %v per second", got.RateWith, got.RateNo)
	}
	// The window began 0.5 s before the measured interval: the change at
	// 100 ms is before it, 2,000 ms is past its 1 s.
	if !slices.Equal(got.ChangesS, []float64{0.1, 0.6}) || !slices.Equal(got.LatencyMs, []float64{950, 1000}) {
		t.Errorf("changes at %v s with latencies %v ms", got.ChangesS, got.LatencyMs)
	}
	if l := got.line(); !strings.Contains(l, "request rate lowest 160/s with churn, 400/s without; p99 highest 9.00 ms with churn, 9.00 ms without; 2 changes") {
		t.Errorf("line: %s", l)
	}
	html := string(htmlChurn(&Churn{Scenarios: []ChurnScenario{{Scenario: "kp+churn", Against: "kp", Timeline: got}}}))
	if c := got.charts("kp+churn", "kp")[2]; c.Series[0].Colour != colour(1) || c.Series[0].Dots[0].Colour != colour(1) || !c.Series[0].NoLine {
		t.Errorf("the changes' chart is not drawn as dots in the churned scenario's colour: %+v", c.Series[0])
	}
	for _, want := range []string{"kp+churn: timeline", "HTTP_RPS_SHORT_C64 requests/s per 250 ms, round 2", "Programming latency (ms) of each change", "seconds into the measured interval", "<circle"} {
		if !strings.Contains(html, want) {
			t.Errorf("HTML lacks %q", want)
		}
	}
}
