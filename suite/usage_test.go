package suite

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/engine"
	"github.com/cnibench/cnibench/results"
)

// usageTarget is a loopTarget whose datapath usage reads are scripted: it
// counts the reads and fails them as told.
type usageTarget struct {
	loopTarget
	starts, ends       int
	failStart, failEnd error
	rejectTest         string // CheckTest refuses this test
}

func (t *usageTarget) StartUsage(context.Context) (UsageMark, error) {
	t.starts++
	if t.failStart != nil {
		return nil, t.failStart
	}
	return time.Now(), nil
}

func (t *usageTarget) EndUsage(_ context.Context, mark UsageMark) (*results.DatapathUsage, error) {
	t.ends++
	if t.failEnd != nil {
		return nil, t.failEnd
	}
	secs := time.Since(mark.(time.Time)).Seconds()
	return results.NewDatapathUsage(results.UsageSourceKubelet, secs, []results.ComponentUsage{
		{Plugin: "cilium", Node: "n0", Pod: "cilium-abcde", CPUSec: 0.25 * secs, MemoryBytes: 100 << 20},
		{Plugin: "kube-proxy", Node: "n0", Pod: "kube-proxy-fghij", CPUSec: 0.05 * secs, MemoryBytes: 20 << 20},
	}), nil
}

func (t *usageTarget) CheckTest(spec TestSpec) error {
	if spec.Name == t.rejectTest {
		return fmt.Errorf("%w: %s cannot run here", ErrUnsupported, spec.Name)
	}
	return nil
}

func runUsage(t *testing.T, tgt *usageTarget, tests ...string) *results.Run {
	t.Helper()
	plan, err := Options{Tests: tests, Placements: []string{"pod-to-pod/same-node"}, Rounds: 3, Duration: 100 * time.Millisecond}.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	plan.Warmup = 0
	out := t.TempDir()
	r := &Runner{Scenarios: []Scenario{{Name: "k8s", Target: tgt}}, Plan: plan, OutDir: out, RunID: "usage"}
	run, err := r.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	disk, err := results.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(disk.Notes) != len(run.Notes) {
		t.Errorf("notes on disk %q, in memory %q", disk.Notes, run.Notes)
	}
	return disk
}

// Every sample gets the datapath usage read around its measurement, and
// the metrics turn it into CPU per transaction, cores and memory; the
// scenario gets one reading more, idle, before its first sample.
func TestRunnerRecordsDatapathUsage(t *testing.T) {
	var calls []string
	tgt := &usageTarget{loopTarget: loopTarget{startAgent(t), &calls, "k8s"}}
	run := runUsage(t, tgt, "TCP_RR")
	if tgt.starts != 4 || tgt.ends != 4 || len(run.Notes) != 0 {
		t.Fatalf("%d starts, %d ends (3 samples and the idle reading), notes %q", tgt.starts, tgt.ends, run.Notes)
	}
	if u := run.Scenarios[0].IdleUsage; u == nil || u.Seconds < 1 || u.MemoryBytes != 120<<20 {
		t.Errorf("idle usage %+v, want the idle window's (1.5 s) with the components' memory", u)
	}
	res := run.Results[0]
	for _, s := range res.Samples {
		u := s.DatapathUsage
		if s.Error != "" || u == nil || u.Seconds < 0.1 || len(u.Components) != 2 || u.MemoryBytes != 120<<20 {
			t.Fatalf("sample %+v, usage %+v", s, u)
		}
		if d := u.Cores - 0.3; d > 1e-9 || d < -1e-9 {
			t.Errorf("cores %f, want 0.3", u.Cores)
		}
	}
	series, err := results.Metrics(res)
	if err != nil {
		t.Fatal(err)
	}
	perOp, cores := series.Metric(results.MetricDatapathCPUOp), series.Metric(results.MetricDatapathCores)
	if perOp == nil || len(perOp.Values) != 3 || perOp.Values[0] <= 0 || cores == nil || cores.Display < 0.29 {
		t.Fatalf("datapath metrics %+v %+v", perOp, cores)
	}
	// 0.3 cores over the measured interval, per transaction, in µs.
	s := res.Samples[0]
	want := 0.3 * s.Result.(*engine.Result).Seconds * 1e6 / float64(s.Result.(*engine.Result).Transactions)
	if got := perOp.Values[0]; got < want*0.999 || got > want*1.001 {
		t.Errorf("datapath CPU per op %.3f µs, want %.3f", got, want)
	}
}

// A read that fails (at the start or at the end of the scenario's idle
// reading, its first) becomes one note for the run, is not tried again,
// and the samples are still taken.
func TestRunnerUsageFailureOneNote(t *testing.T) {
	agent := startAgent(t) // one: its engine ports are fixed
	for _, c := range []struct {
		name       string
		start, end error
		ends       int
	}{
		{"start", errors.New("metrics API: the server could not find the requested resource"), nil, 0},
		{"end", nil, errors.New("no datapath container was read at both ends of the sample"), 1},
	} {
		var calls []string
		tgt := &usageTarget{loopTarget: loopTarget{agent, &calls, "k8s"}, failStart: c.start, failEnd: c.end}
		run := runUsage(t, tgt, "TCP_RR", "UDP_RR")
		if tgt.starts != 1 || tgt.ends != c.ends {
			t.Errorf("%s: %d starts, %d ends after the first failure, want 1 and %d", c.name, tgt.starts, tgt.ends, c.ends)
		}
		if len(run.Notes) != 1 || !strings.Contains(run.Notes[0], "from the idle reading before its first sample on (not read again this run)") || !strings.Contains(run.Notes[0], "scenario k8s") {
			t.Errorf("%s: notes %q, want exactly one", c.name, run.Notes)
		}
		for _, res := range run.Results {
			for _, s := range res.Samples {
				if s.Error != "" || s.Result == nil || s.DatapathUsage != nil {
					t.Errorf("%s: %s sample %+v", c.name, res.Test, s)
				}
			}
			if len(res.Samples) != 3 {
				t.Errorf("%s: %s has %d samples", c.name, res.Test, len(res.Samples))
			}
		}
	}
}

// A test the target cannot run is recorded as skipped with the reason,
// never silently dropped, and is not measured.
func TestRunnerSkipsTestTheTargetCannotRun(t *testing.T) {
	var calls []string
	tgt := &usageTarget{loopTarget: loopTarget{startAgent(t), &calls, "k8s"}, rejectTest: "UDP_RR"}
	run := runUsage(t, tgt, "TCP_RR", "UDP_RR")
	if len(run.Results) != 2 {
		t.Fatalf("%d results, want 2 (the skipped one kept)", len(run.Results))
	}
	for _, res := range run.Results {
		switch res.Test {
		case "UDP_RR":
			if res.Skipped != "unsupported on this target: UDP_RR cannot run here" || len(res.Samples) != 0 {
				t.Errorf("UDP_RR: skipped %q, %d samples", res.Skipped, len(res.Samples))
			}
		case "TCP_RR":
			if res.Skipped != "" || len(res.Samples) != 3 {
				t.Errorf("TCP_RR: skipped %q, %d samples", res.Skipped, len(res.Samples))
			}
		}
	}
	if len(calls) != 3 {
		t.Errorf("%d agent calls, want 3 (TCP_RR only)", len(calls))
	}
}
