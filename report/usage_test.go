package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/engine"
	"github.com/cnibench/cnibench/engine/httpload"
	"github.com/cnibench/cnibench/engine/kinds"
	"github.com/cnibench/cnibench/results"
)

// withUsage gives every sample 0.2 cores of datapath CPU over its 12 s
// (2.4 s, of which 10/12 in the measured interval) and 150 MiB.
func withUsage(samples []results.Sample) []results.Sample {
	for i := range samples {
		samples[i].ClientCPUSec, samples[i].ServerCPUSec = 0, 0 // no cgroup accounting on clusters
		samples[i].DatapathUsage = results.NewDatapathUsage(results.UsageSourceKubelet, 12, []results.ComponentUsage{
			{Plugin: "cilium", Node: "worker-a", Pod: "cilium-abcde", CPUSec: 1.8, MemoryBytes: 120 << 20},
			{Plugin: "cilium", Node: "worker-b", Pod: "cilium-fghij", CPUSec: 0.6, MemoryBytes: 30 << 20},
		})
	}
	return samples
}

// usageRun is a one-scenario cluster run whose samples carry datapath
// usage, with the note of a DNS-less agent image.
func usageRun(t *testing.T) *results.Run {
	pl := results.Placement{Path: "pod-to-pod", Node: "other-node", Client: "node0-pod0", Server: "node1-pod0", ServerAddr: "10.244.2.10"}
	opts := &engine.Options{Host: pl.ServerAddr, RunnerOptions: kinds.RunnerOptions{Duration: engine.Duration(10 * time.Second)}, Streams: 1}
	return &results.Run{
		SchemaVersion: results.SchemaVersion, RunID: "20261201-130000-k8s1", Status: results.StatusComplete, Start: t0, End: t0.Add(5 * time.Minute),
		Target:    results.Target{Kind: "k8s"},
		Scenarios: []results.Scenario{{Name: "eks", Target: results.Target{Kind: "k8s"}}},
		Plan:      results.Plan{Rounds: 3, Duration: engine.Duration(10 * time.Second)},
		Notes:     []string{"scenario eks: datapath CPU and memory not recorded from round 3 of TCP_STREAM pod-to-pod/other-node on: metrics API unavailable"},
		Results: []results.Result{
			{Scenario: "eks", Test: "TCP_RR", Placement: pl, Options: opts,
				Samples: withUsage(rrSamples(t, engine.TCPRR, []float64{30000, 30000, 30000}, []float64{30, 31, 29}, 0))},
			{Scenario: "eks", Test: "HTTP_RPS_C64", Placement: pl, Options: &httpload.Options{Host: pl.ServerAddr, Connections: 64, KeepAlive: true},
				Samples: withUsage(httpSamples(t, []float64{100000, 100000, 100000}, []float64{600, 610, 590}, 0, 0, 0))},
			{Scenario: "eks", Test: "TCP_STREAM", Placement: pl, Options: opts,
				Samples: streamSamples([]float64{9.4, 9.5, 9.45}, nil)}, // no usage: the table keeps its shape
		},
	}
}

// The datapath's CPU per unit of work, cores and memory: columns in the
// terminal table where a sample has them, rows in the test's section of
// report.md, and the run's note as a warning.
func TestDatapathUsageRendered(t *testing.T) {
	rep, err := Build([]Input{{Run: usageRun(t)}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var tb bytes.Buffer
	if err := TableOf(&tb, rep); err != nil {
		t.Fatal(err)
	}
	table := tb.String()
	// 2.4 s × 10/12 measured = 2 s over 300,000 transactions = 6.67 µs;
	// over 1,000,000 requests = 2.00 µs.
	for _, want := range [][]string{
		{"CPU µs/op (cli+srv)", "DP CPU µs/op", "DP cores", "DP MiB"},
		{"TCP_RR", "6.67", "0.200", "150"},
		{"CPU µs/req (cli+srv)", "DP CPU µs/req"},
		{"HTTP_RPS_C64", "2.00", "0.200", "150"},
	} {
		if !lineWith(table, want...) {
			t.Errorf("no table line with %q:\n%s", want, table)
		}
	}
	if lineWith(table, "Streams", "DP") {
		t.Errorf("stream table got datapath columns without usage:\n%s", table)
	}
	var md bytes.Buffer
	if err := Markdown(&md, rep); err != nil {
		t.Fatal(err)
	}
	for _, want := range [][]string{
		{"| datapath CPU per op (µs)", "| 6.67"},
		{"| datapath CPU per request (µs)", "| 2.00"},
		{"| datapath cores (cores)", "| 0.200"},
		{"| datapath memory (MiB)", "| 150"},
		{"- run 20261201-130000-k8s1: scenario eks: datapath CPU and memory not recorded"},
	} {
		if !lineWith(md.String(), want...) {
			t.Errorf("no report.md line with %q:\n%s", want, md.String())
		}
	}
	var html bytes.Buffer
	if err := HTML(&html, rep); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(html.String(), "datapath CPU per op") {
		t.Error("report.html has no datapath CPU row")
	}
	// A lab run (no usage) keeps its table: no datapath column.
	var lab bytes.Buffer
	if err := TableOf(&lab, buildFixture(t)); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(lab.String(), "DP CPU") {
		t.Errorf("lab table has datapath columns:\n%s", lab.String())
	}
}

// lineWith tells whether one line of s contains every part.
func lineWith(s string, parts ...string) bool {
	for _, l := range strings.Split(s, "\n") {
		ok := true
		for _, p := range parts {
			ok = ok && strings.Contains(l, p)
		}
		if ok {
			return true
		}
	}
	return false
}
