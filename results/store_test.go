package results

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/engine"
	"github.com/cnibench/cnibench/engine/engineapi"
	"github.com/cnibench/cnibench/engine/kinds"
	"github.com/cnibench/cnibench/stats"
)

func TestSaveLoadRoundTrip(t *testing.T) {
	dir := t.TempDir()
	h := stats.NewHistogram()
	stats.Record(h, 42*time.Microsecond)
	lat, _ := stats.Summarize(h)
	run := &Run{SchemaVersion: SchemaVersion, RunID: "r1", Status: StatusComplete, Plan: Plan{Duration: engine.Duration(time.Second)},
		Results: []Result{{Test: "TCP_RR", Samples: []Sample{{Round: 1, Result: &engine.Result{Transactions: 1, RatePerSec: 10, Latency: lat}}}}}}
	if err := Save(dir, run); err != nil {
		t.Fatal(err)
	}
	got, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got.RunID != "r1" || time.Duration(got.Plan.Duration) != time.Second || got.Results[0].Samples[0].Result.(*engineapi.Result).Latency.P50Us != lat.P50Us {
		t.Fatalf("round trip lost data: %+v", got)
	}
	// No temp files left behind by the atomic write.
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("dir has %d entries, want only results.json", len(entries))
	}
}

func TestLoadRejectsOtherSchema(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, FileName), []byte(`{"schema_version": 99}`), 0o644)
	if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "schema_version 99") {
		t.Fatalf("err = %v", err)
	}
}

func TestCheckWritable(t *testing.T) {
	dir := t.TempDir()
	if err := CheckWritable(filepath.Join(dir, "a", "b")); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "file")
	os.WriteFile(file, nil, 0o644)
	err := CheckWritable(filepath.Join(file, "sub"))
	if err == nil || !strings.Contains(err.Error(), "--out") {
		t.Fatalf("err = %v, want an --out error", err)
	}
}

func TestSummarizeMediansAndMergedLatency(t *testing.T) {
	mk := func(us int, n int) *stats.Latency {
		h := stats.NewHistogram()
		for i := 0; i < n; i++ {
			stats.Record(h, time.Duration(us)*time.Microsecond)
		}
		l, _ := stats.Summarize(h)
		return l
	}
	t0 := time.Now()
	r := Result{Test: "TCP_RR", Samples: []Sample{
		{Start: t0, End: t0.Add(2 * time.Second), ClientCPUSec: 2, Result: &engine.Result{RunnerResults: kinds.RunnerResults{Seconds: 1}, Transactions: 900, RatePerSec: 100, Latency: mk(10, 900)}},
		{Start: t0, End: t0.Add(time.Second), Result: &engine.Result{RunnerResults: kinds.RunnerResults{Seconds: 1}, Transactions: 100, RatePerSec: 300, Latency: mk(1000, 100)}},
		{Result: &engine.Result{RunnerResults: kinds.RunnerResults{Seconds: 1}, Transactions: 10, RatePerSec: 200, Latency: mk(10, 10)}},
		{Error: "agent went away"},
	}}
	s, err := Summarize(r)
	if err != nil {
		t.Fatal(err)
	}
	if s.Samples != 4 || s.Failed != 1 || s.FirstSampleErr != "agent went away" {
		t.Fatalf("counts: %+v", s)
	}
	if s.RatePerSec != 200 {
		t.Fatalf("median rate = %v, want 200", s.RatePerSec)
	}
	if s.Latency.Count != 1010 || s.Latency.P50Us > 11 || s.Latency.P99Us < 900 {
		t.Fatalf("merged latency = %+v", s.Latency)
	}
	// 2 s of CPU over a 2 s sample measuring 1 s: 1 s for 1010 ops.
	if want := 1e6 / 1010.0; s.ClientCPUPerOp < want*0.99 || s.ClientCPUPerOp > want*1.01 {
		t.Fatalf("client CPU per op = %v µs, want %v", s.ClientCPUPerOp, want)
	}
}

func TestMedian(t *testing.T) {
	if m := Median([]float64{3, 1, 2}); m != 2 {
		t.Fatal(m)
	}
	if m := Median([]float64{4, 1, 2, 3}); m != 2.5 {
		t.Fatal(m)
	}
	if m := Median(nil); m != 0 {
		t.Fatal(m)
	}
}
