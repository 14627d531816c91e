package report

import (
	"bytes"
	"html/template"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/cnibench/cnibench/engine"
	"github.com/cnibench/cnibench/engine/dnsload"
	"github.com/cnibench/cnibench/engine/httpload"
	"github.com/cnibench/cnibench/engine/kinds"
	"github.com/cnibench/cnibench/results"
	"github.com/cnibench/cnibench/stats"
)

// fuzzTests are the tests a fuzzed run draws from: every kind, fixed-rate
// and max-rate load tests.
var fuzzTests = []string{"TCP_RR", "TCP_CRR", "UDP_RR", "TCP_STREAM", "UDP_STREAM", "HTTP_RPS_C64", "HTTP_QPS_1000", "DNS_QPS_MAX", "DNS_QPS_1000"}

var fuzzPlacements = []results.Placement{
	{Path: "pod-to-pod", Node: "other-node", Client: "node0-pod0", Server: "node1-pod0", ServerAddr: "198.19.1.10"},
	{Path: "pod-to-pod", Node: "same-node", Client: "node0-pod0", Server: "node0-pod1", ServerAddr: "198.19.0.11"},
	{Path: "pod-to-service", Node: "other-node", Client: "node0-pod0", Server: "node1-pod0", ServerAddr: "198.18.128.1"},
}

// fuzzShape is what the fuzzer controls of a run; fuzzRun turns it into a
// valid results document (what cnibench could have written).
type fuzzShape struct {
	seed             uint64
	scenarios        uint8   // 1..3 columns
	rounds           uint8   // 1..8 samples per result
	failed           uint16  // bit i%16: sample i failed
	level, spread    float64 // a sample's value is level × (1 ± spread)
	name             string  // scenario names derive from it
	tests, placement uint16  // bit masks over fuzzTests, fuzzPlacements
}

// finite maps any float to a positive finite value below limit.
func finite(v, limit float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return limit / 2
	}
	v = math.Mod(math.Abs(v), limit)
	if v < 1e-6 {
		v = 1e-6
	}
	return v
}

// scenarioName is a printable, non-blank name from fuzzed text.
func scenarioName(s string, i int) string {
	var b strings.Builder
	for _, r := range s {
		if unicode.IsPrint(r) && b.Len() < 24 {
			b.WriteRune(r)
		}
	}
	base := strings.TrimSpace(b.String())
	if base == "" {
		base = "sc"
	}
	return base + "-" + string(rune('a'+i))
}

func fuzzHistogram(t *testing.T, rng *rand.Rand, baseUs float64) *stats.Latency {
	h := stats.NewHistogram()
	for range 50 {
		stats.Record(h, time.Duration(baseUs*(1+rng.Float64())*1e3))
	}
	l, err := stats.Summarize(h)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// fuzzSample is one sample of test at value v (a rate, or Gbit/s).
func fuzzSample(t *testing.T, rng *rand.Rand, test string, v float64) results.Sample {
	s := results.Sample{ClientCPUSec: rng.Float64(), ServerCPUSec: rng.Float64()}
	lat := func() *stats.Latency { return fuzzHistogram(t, rng, 10+1e6/v) }
	switch {
	case strings.HasPrefix(test, "HTTP"):
		h := &httpload.Result{Mode: "max-rate", RunnerResults: kinds.RunnerResults{Seconds: 1}, Conns: 64, Requests: int64(v), OK: int64(v), RPS: v, Latency: lat(), ClientCPU: kinds.ClientCPU{ClientCPUs: 1, ClientCPUUtil: rng.Float64()}}
		if strings.Contains(test, "QPS") {
			h.Mode, h.TargetQPS, h.AchievedRatio = "fixed-qps", 1000, v/1000
			h.MissedTarget, h.MissedByPercent = v < 990, math.Max(0, 100*(1-v/1000))
		}
		s.Result = h
	case strings.HasPrefix(test, "DNS"):
		s.Result = &dnsload.Result{Mode: "max-rate", RunnerResults: kinds.RunnerResults{Seconds: 1}, Sent: int64(v), Responses: int64(v), OK: int64(v), QPS: v, Latency: lat()}
	case strings.HasSuffix(test, "STREAM"):
		e := &engine.Result{Test: engine.Test(test), RunnerResults: kinds.RunnerResults{Seconds: 1}, Streams: 1, ThroughputBitsSec: v * 1e9, BytesReceived: int64(v * 1e9 / 8)}
		if test == "UDP_STREAM" {
			e.PacketsSent, e.PacketsReceived, e.LossPercent, e.OfferedBitsSec = 1000, 990, 1, v*1.01e9
		}
		s.Result = e
	default:
		s.Result = &engine.Result{Test: engine.Test(test), RunnerResults: kinds.RunnerResults{Seconds: 1}, Streams: 1, Transactions: int64(v) + 1, RatePerSec: v, Latency: lat()}
	}
	return s
}

func fuzzRun(t *testing.T, sh fuzzShape) *results.Run {
	rng := rand.New(rand.NewPCG(sh.seed, 7))
	level, spread := finite(sh.level, 1e7)+1, finite(sh.spread, 1)
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	run := &results.Run{SchemaVersion: results.SchemaVersion, RunID: "fuzz", Status: results.StatusComplete, Start: t0, End: t0.Add(time.Hour),
		Plan: results.Plan{Profile: "standard", Rounds: int(sh.rounds%8) + 1, Duration: engine.Duration(time.Second), Mode: engine.Blocking}}
	for i := range int(sh.scenarios%3) + 1 {
		run.Scenarios = append(run.Scenarios, results.Scenario{Name: scenarioName(sh.name, i), Target: results.Target{Kind: "lab", Details: map[string]any{"nodes": 2}}})
	}
	run.Target = run.Scenarios[0].Target
	n := 0
	for ti, test := range fuzzTests {
		if sh.tests&(1<<ti) == 0 && !(sh.tests == 0 && ti == 0) {
			continue
		}
		run.Plan.Tests = append(run.Plan.Tests, test)
		for pi, p := range fuzzPlacements {
			if sh.placement&(1<<pi) == 0 && !(sh.placement%8 == 0 && pi == 0) {
				continue
			}
			for _, sc := range run.Scenarios {
				r := results.Result{Scenario: sc.Name, Test: test, Placement: p, Options: &engine.Options{Test: engine.Test(test), Host: p.ServerAddr, RunnerOptions: kinds.RunnerOptions{Duration: engine.Duration(time.Second)}}}
				for round := 1; round <= run.Plan.Rounds; round++ {
					var s results.Sample
					if sh.failed&(1<<(n%16)) != 0 {
						s.Error = "agent node0-pod0: connection reset"
					} else {
						s = fuzzSample(t, rng, test, level*(1+spread*(2*rng.Float64()-1))+1e-3)
					}
					s.Round, s.Start, s.End = round, t0.Add(time.Duration(n)*time.Second), t0.Add(time.Duration(n+1)*time.Second)
					r.Samples = append(r.Samples, s)
					n++
				}
				run.Results = append(run.Results, r)
			}
		}
	}
	return run
}

// htmlText is s as html/template writes it in text.
func htmlText(t *testing.T, s string) string {
	var b strings.Builder
	if err := template.Must(template.New("").Parse("{{.}}")).Execute(&b, s); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// FuzzRender renders reports of valid runs built from fuzzed numbers,
// names, sample counts and failures. Whatever the shape: Build succeeds,
// Markdown, HTML and JSON render, every scenario is named in both reports
// (escaped as each format escapes), every test is in them, and no number
// prints as NaN or Inf.
func FuzzRender(f *testing.F) {
	f.Add(uint64(1), uint8(1), uint8(4), uint16(0), 30000.0, 0.01, "native", uint16(0x1ff), uint16(1))
	f.Add(uint64(2), uint8(2), uint8(0), uint16(0), 1.0, 0.0, "vxlan+ebpf", uint16(1), uint16(7))
	f.Add(uint64(3), uint8(1), uint8(7), uint16(0xffff), 5e6, 0.5, "a|b<c>&\"d'", uint16(0x1ff), uint16(3))
	f.Add(uint64(4), uint8(2), uint8(4), uint16(0x5555), math.Inf(1), math.NaN(), "", uint16(0x90), uint16(4))
	f.Add(uint64(5), uint8(0), uint8(1), uint16(1), 1e-300, 1e300, "  \t", uint16(0x60), uint16(2))
	f.Fuzz(func(t *testing.T, seed uint64, scenarios, rounds uint8, failed uint16, level, spread float64, name string, tests, placement uint16) {
		run := fuzzRun(t, fuzzShape{seed: seed, scenarios: scenarios, rounds: rounds, failed: failed, level: level, spread: spread, name: name, tests: tests, placement: placement})
		rep, err := Build([]Input{{Run: run}}, Options{})
		if err != nil {
			t.Fatalf("valid run refused: %v", err)
		}
		var md, ht, js bytes.Buffer
		for _, r := range []struct {
			render func(*bytes.Buffer, *Report) error
			out    *bytes.Buffer
		}{{func(b *bytes.Buffer, r *Report) error { return Markdown(b, r) }, &md},
			{func(b *bytes.Buffer, r *Report) error { return HTML(b, r) }, &ht},
			{func(b *bytes.Buffer, r *Report) error { return JSON(b, r) }, &js}} {
			if err := r.render(r.out, rep); err != nil {
				t.Fatalf("render: %v", err)
			}
		}
		for _, sc := range run.Scenarios {
			if !strings.Contains(md.String(), mdText(sc.Name)) {
				t.Errorf("report.md does not name scenario %q (as %q)", sc.Name, mdText(sc.Name))
			}
			if !strings.Contains(ht.String(), htmlText(t, sc.Name)) {
				t.Errorf("report.html does not name scenario %q", sc.Name)
			}
		}
		for _, test := range run.Plan.Tests {
			if !strings.Contains(md.String(), test) || !strings.Contains(ht.String(), test) {
				t.Errorf("a report does not mention test %s", test)
			}
		}
		for _, bad := range []string{"NaN", "+Inf", "-Inf"} {
			if strings.Contains(name, bad) {
				continue
			}
			for format, out := range map[string]string{"md": md.String(), "html": ht.String()} {
				if i := strings.Index(out, bad); i >= 0 {
					t.Errorf("report.%s prints %s: %q", format, bad, out[max(0, i-200):min(len(out), i+50)])
				}
			}
		}
	})
}
