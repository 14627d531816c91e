package report

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/datapath"
	"github.com/cnibench/cnibench/datapath/sweep"
	"github.com/cnibench/cnibench/engine"
	"github.com/cnibench/cnibench/engine/httpload"
	"github.com/cnibench/cnibench/results"
)

const scaleFixture = "servicescale"

// scaleCurve is one datapath's designed numbers per step (0, 1,000,
// 5,000, 10,000 Services); rounds vary by ±1%.
type scaleCurve struct {
	name, dp       string
	shortRPS       []float64
	keepRPS        []float64
	crrP50         []float64
	programMs      []float64
	stoppedAtSteps int // steps measured (the rest stopped)
}

var scaleSteps = []int{0, 1000, 5000, 10000}

// The fixture: iptables' short-connection RPS falls to 0.41× by 10,000
// Services while eBPF stays at 0.99×; iptables starts ahead (10,000 vs
// 8,000) and the curves cross between 1,000 (9,000 vs 8,000) and 5,000
// (6,000 vs 7,950): at 1,000 + 1,000/2,950 × 4,000 ≈ 2,356 Services.
// nftables' programming is quadratic and it stops before 10,000.
var scaleCurves = []scaleCurve{
	{"iptables", "iptables", []float64{10000, 9000, 6000, 4100}, []float64{30000, 30100, 29800, 29900}, []float64{100, 110, 150, 200}, []float64{50, 1000, 6000, 14000}, 4},
	{"ebpf", "ebpf", []float64{8000, 8000, 7950, 7900}, []float64{31000, 31100, 30900, 31000}, []float64{90, 90, 91, 92}, []float64{0.2, 5, 25, 50}, 4},
	{"nftables", "nftables", []float64{9500, 9400, 9300}, []float64{30500, 30400, 30600}, []float64{95, 96, 97}, []float64{40, 300, 7000}, 3},
}

func spread(v float64) []float64 { return []float64{v, v * 1.01, v * 0.99, v * 1.005, v * 0.995} }

func scaleFixtureRun(t *testing.T) *results.Run {
	run := &results.Run{SchemaVersion: results.SchemaVersion, RunID: "sweep-fixture", Status: results.StatusComplete,
		Start: t0, End: t0.Add(time.Hour), Tool: results.Tool{Name: "cnibench", Version: "test"},
		Plan: results.Plan{Profile: "quick", Tests: []string{"HTTP_RPS_C64", "HTTP_RPS_SHORT_C64", "TCP_CRR", "TCP_RR"},
			Placements: []string{"pod-to-service/other-node"}, Rounds: 5, Duration: engine.Duration(4 * time.Second)}}
	pl := results.Placement{Path: "pod-to-service", Node: "other-node", Client: "node0-pod0", Server: "node1-pod0+node1-pod1", ServerAddr: "198.18.128.1"}
	for _, c := range scaleCurves {
		run.Scenarios = append(run.Scenarios, results.Scenario{Name: c.name, Target: results.Target{Kind: "lab"}})
		sw := results.Sweep{Scenario: c.name, Datapath: c.dp, Options: sweep.Options{Steps: scaleSteps, Endpoints: 4, Position: "random", MaxStepTime: 10 * time.Second}}
		if c.stoppedAtSteps < len(scaleSteps) {
			sw.Stopped = c.dp + ": stopped before 10000 Services: programming predicted to take 28s (> --max-step-time 10s) from the steps so far"
		}
		for i := 0; i < c.stoppedAtSteps; i++ {
			n := scaleSteps[i]
			want := datapath.Counts{Services: n + 7, Endpoints: 4*n + 14}
			apply := time.Duration(c.programMs[i] * float64(time.Millisecond))
			sw.Steps = append(sw.Steps, results.SweepStep{Step: sweep.Step{Services: n, Position: n / 3,
				Program: datapath.ProgramStats{Generate: apply / 50, Apply: apply - apply/50}, Verify: apply / 10,
				Counts: want, Expected: want, Memory: datapath.Memory{RulesetBytes: int64(1000 + 350*n)}}, Conntrack: 1000 + i})
			short := httpSamples(t, spread(c.shortRPS[i]), spread(64e6/c.shortRPS[i]), 0, 0, 0)
			run.Results = append(run.Results,
				results.Result{Scenario: c.name, Test: "HTTP_RPS_C64", Placement: pl, Services: n,
					Options: &httpload.Options{Connections: 64, KeepAlive: true},
					Samples: httpSamples(t, spread(c.keepRPS[i]), spread(2000), 0, 0, 0)},
				results.Result{Scenario: c.name, Test: "HTTP_RPS_SHORT_C64", Placement: pl, Services: n,
					Options: &httpload.Options{Connections: 64}, Samples: short},
				results.Result{Scenario: c.name, Test: "TCP_CRR", Placement: pl, Services: n,
					Samples: rrSamples(t, engine.TCPCRR, spread(1e6/c.crrP50[i]/1.2), spread(c.crrP50[i]), 0)},
				results.Result{Scenario: c.name, Test: "TCP_RR", Placement: pl, Services: n,
					Samples: rrSamples(t, engine.TCPRR, spread(20000), spread(45), 0)})
		}
		run.Sweeps = append(run.Sweeps, sw)
	}
	return run
}

// loadScaleFixture returns testdata/servicescale/results.json (rewritten
// under -update).
func loadScaleFixture(t *testing.T) *results.Run {
	t.Helper()
	dir := filepath.Join(fixtureDir, scaleFixture)
	if *update {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := results.Save(dir, scaleFixtureRun(t)); err != nil {
			t.Fatal(err)
		}
	}
	run, err := results.Load(filepath.Join(dir, results.FileName))
	if err != nil {
		t.Fatal(err)
	}
	return run
}

func near(got, want, tol float64) bool { return math.Abs(got-want) <= tol }

// The analysis finds what the fixture was built with: degradation and its
// verdicts, fits, growth exponents, crossover and the stop note.
func TestServiceScaleAnalysis(t *testing.T) {
	rep, err := Build([]Input{{Run: loadScaleFixture(t)}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ss := rep.ServiceScale
	if ss == nil || len(ss.Datapaths) != 3 {
		t.Fatalf("service scale: %+v", ss)
	}
	ipt, bpf, nft := ss.Datapaths[0], ss.Datapaths[1], ss.Datapaths[2]
	metric := func(d ScaleDatapath, step int, name string) ScaleMetric {
		for _, m := range d.Steps[step].Metrics {
			if m.Name == name {
				return m
			}
		}
		t.Fatalf("%s has no %s", d.Scenario, name)
		return ScaleMetric{}
	}
	short := metric(ipt, 3, "short-connection RPS")
	if !near(float64(short.Ratio), 0.41, 0.001) || short.VsStep0 == nil || !short.VsStep0.Worse {
		t.Errorf("iptables short RPS at 10,000: ratio %v, verdict %+v; want 0.41, significantly worse", short.Ratio, short.VsStep0)
	}
	if m := metric(bpf, 3, "short-connection RPS"); !near(float64(m.Ratio), 0.9875, 0.001) {
		t.Errorf("ebpf short RPS ratio %v, want 0.9875", m.Ratio)
	}
	if m := metric(ipt, 3, "keep-alive RPS"); math.Abs(float64(m.Ratio)-1) > 0.1 || m.VsStep0.Worse && m.VsStep0.DeltaPct < -10 {
		t.Errorf("iptables keep-alive %+v", m)
	}
	if m := metric(ipt, 0, "short-connection RPS"); m.VsStep0 != nil || m.Ratio != 1 {
		t.Errorf("step 0 against itself: %+v", m)
	}
	// Per-connection cost 1e6/RPS: 100, 111, 167, 244 µs → ~14 µs per 1,000.
	if c := ipt.Cost; c == nil || !near(float64(c.PerThousand), 14.4, 0.5) || c.R2 < 0.95 || c.N != 20 {
		t.Errorf("iptables cost fit %+v", c)
	}
	// The p50 of the fixture's histograms is 1.24× their base: 12.4 µs per 1,000.
	if c := ipt.CRRCost; c == nil || !near(float64(c.PerThousand), 12.4, 0.3) {
		t.Errorf("iptables CRR p50 fit %+v", c)
	}
	// Programming, fitted as a + b·Services^k over every step: iptables
	// 50 ms, 1 s, 6 s, 14 s at 0, 1,000, 5,000, 10,000 (k ≈ 1.23, where
	// the old log-log slope said 1.14); eBPF linear (k ≈ 1); nftables
	// stopped after 3 steps, too few for the 3-parameter fit.
	if p := ipt.Program; p == nil || !near(float64(p.Exponent), 1.23, 0.02) || p.ExponentR2 < 0.999 || p.MaxServices != 10000 || !near(float64(p.UsPerService), 1400, 1) || !near(float64(p.GenSharePct), 2, 0.01) {
		t.Errorf("iptables programming fit %+v", p)
	}
	if p := bpf.Program; p == nil || !near(float64(p.Exponent), 1, 0.02) {
		t.Errorf("ebpf programming fit %+v", p)
	}
	if p := nft.Program; p == nil || !math.IsNaN(float64(p.Exponent)) || len(nft.Steps) != 3 || nft.Stopped == "" {
		t.Errorf("nftables: %d steps, stopped %q, fit %+v", len(nft.Steps), nft.Stopped, p)
	}
	// Crossovers: iptables/ebpf at ~2,356; iptables is above nftables at
	// 0 (10,000 vs 9,500) and below at 1,000 (9,000 vs 9,400): they cross
	// at 500/900 × 1,000 ≈ 556 on the shared steps 0, 1,000, 5,000.
	if len(ss.Crossovers) != 3 {
		t.Fatalf("%d crossovers", len(ss.Crossovers))
	}
	if c := ss.Crossovers[0]; !c.Crosses || !near(float64(c.Services), 2356, 1) || c.Ahead != "ebpf" {
		t.Errorf("iptables/ebpf crossover %+v", c)
	}
	if c := ss.Crossovers[1]; !c.Crosses || !near(float64(c.Services), 556, 1) || c.Ahead != "nftables" {
		t.Errorf("iptables/nftables crossover %+v", c)
	}
	if c := ss.Crossovers[2]; c.Crosses || c.Ahead != "nftables" || !strings.Contains(c.Text, "no crossover in the measured range") {
		t.Errorf("ebpf/nftables crossover %+v", c)
	}
	joined := strings.Join(ss.Findings, "\n")
	for _, want := range []string{"iptables short-connection RPS at 10,000 Services is 0.41× step 0 (significant).",
		"ebpf short-connection RPS at 10,000 Services is 0.99× step 0", "within ±10% of step 0",
		"iptables programs 10,000 Services in 14 s (growth exponent 1.23, fit of a + b·Services^k with r² 1.00",
		"nftables programs 5,000 Services in 7.00 s (growth exponent n/a (fewer than 4 steps)",
		"nftables: stopped before 10000 Services"} {
		if !strings.Contains(joined, want) {
			t.Errorf("findings lack %q:\n%s", want, joined)
		}
	}
	// The plain sections compare the datapaths step by step.
	var secs []string
	for _, s := range rep.Sections {
		secs = append(secs, s.Test+" "+s.Placement)
	}
	if !strings.Contains(strings.Join(secs, "\n"), "TCP_CRR pod-to-service/other-node @ 10,000 Services") {
		t.Errorf("sections: %v", secs)
	}
}

// The rendered section is stable: Markdown and JSON golden files.
func TestServiceScaleGolden(t *testing.T) {
	rep, err := Build([]Input{{Run: loadScaleFixture(t)}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var md strings.Builder
	markdownServiceScale(&md, rep.ServiceScale)
	golden(t, filepath.Join(scaleFixture, "section.golden.md"), []byte(md.String()))
	js, err := json.MarshalIndent(rep.ServiceScale, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden(t, filepath.Join(scaleFixture, "section.golden.json"), append(js, '\n'))
	var page bytes.Buffer
	if err := HTML(&page, rep); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`<h2 id="service-scale">Service scale</h2>`, "<polyline", "log scale", "(about 2,356; significant on both sides); ebpf is ahead at 10,000 Services"} {
		if !strings.Contains(page.String(), want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
}

// A cluster sweep's table shows each step's API writes, node sync and
// per-Service programming latency apart, and the placement it measured.
func TestServiceScaleClusterColumns(t *testing.T) {
	sync := &sweep.Sync{Mode: "node", APIWrites: 34 * time.Second, Writes: 2000, NodeSync: 2300 * time.Millisecond,
		Latency: &sweep.Latency{Services: 1000, P50: 1200 * time.Millisecond, P99: 2500 * time.Millisecond, Resolution: time.Second},
		Nodes:   []sweep.NodeSync{{Node: "worker-a", Mode: "node", Time: 2300 * time.Millisecond}}}
	ss := &ServiceScale{Datapaths: []ScaleDatapath{{Scenario: "kind", Datapath: "kube-proxy-iptables", Position: "random",
		Placement: "pod-to-service/same-node", Steps: []ScaleStep{{Services: 0}, {Services: 1000, Sync: sync}}}}}
	tab := ss.tables()[0]
	if !strings.Contains(tab.Title, "on pod-to-service/same-node") {
		t.Errorf("title %q lacks the placement", tab.Title)
	}
	head := strings.Join(tab.Head, "|")
	if !strings.Contains(head, "API writes|node sync|per-Service latency p50 / p99") {
		t.Fatalf("head %q", head)
	}
	row := strings.Join(tab.Rows[1], "|")
	for _, want := range []string{"34 s (2,000 writes, 59/s)", "worker-a 2.30 s", "1.20 s / 2.50 s (1,000 Services, ±1.00 s)"} {
		if !strings.Contains(row, want) {
			t.Errorf("row %q lacks %q", row, want)
		}
	}
	if row0 := strings.Join(tab.Rows[0], "|"); strings.Count(row0, "–") < 3 {
		t.Errorf("a step without sync: %q", row0)
	}
}
