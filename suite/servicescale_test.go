package suite

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/datapath"
	"github.com/cnibench/cnibench/datapath/sweep"
	"github.com/cnibench/cnibench/results"
)

// memDatapath holds in memory whatever it was last programmed with: a
// datapath the sweep can drive without root.
type memDatapath struct{ held datapath.Counts }

func (*memDatapath) Name() string { return "mem" }
func (d *memDatapath) Program(_ context.Context, spec datapath.Spec) (datapath.ProgramStats, error) {
	d.held = d.Expected(spec)
	return datapath.ProgramStats{}, nil
}
func (d *memDatapath) Verify(context.Context) (datapath.Counts, error) { return d.held, nil }
func (*memDatapath) Expected(spec datapath.Spec) datapath.Counts {
	return datapath.Counts{Services: len(spec.Services), Endpoints: spec.Endpoints()}
}
func (*memDatapath) Memory(context.Context) (datapath.Memory, error) { return datapath.Memory{}, nil }
func (*memDatapath) Close() error                                    { return nil }

// scaleLoopTarget is a usageTarget a sweep can run on: its Service
// datapath is memDatapath, its conntrack cannot be read.
type scaleLoopTarget struct {
	*usageTarget
	dp *memDatapath
}

func (t scaleLoopTarget) ScaleDatapath() (datapath.Datapath, []datapath.Service, error) {
	return t.dp, nil, nil
}
func (t scaleLoopTarget) ScalePlacement() (string, error) { return PodToServiceOtherNode, nil }
func (t scaleLoopTarget) ConntrackUsage(context.Context) (int, int, int, error) {
	return 0, 0, 0, errors.ErrUnsupported
}
func (t scaleLoopTarget) EphemeralPorts() (int, error) { return 0, errors.ErrUnsupported }

// The sweep is a schedule of the one sample loop: every step's samples
// are taken and saved, and what a sample's usage read says reaches the
// run's notes (the old ScaleRunner dropped them).
func TestServiceScaleScheduleKeepsUsageNotes(t *testing.T) {
	c := startAgent(t)
	var calls []string
	tgt := scaleLoopTarget{&usageTarget{loopTarget: loopTarget{c, &calls, "a"}, failStart: errors.New("metrics API absent")}, &memDatapath{}}
	plan, err := Options{Tests: []string{"TCP_RR"}, Placements: []string{PodToServiceOtherNode}, Rounds: 2, Duration: 150 * time.Millisecond}.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	plan.Warmup = 0
	out := t.TempDir()
	r := &Runner{Scenarios: []Scenario{{Name: "a", Target: tgt}}, Plan: plan, OutDir: out, RunID: "sweep",
		Schedule: &ServiceScale{Sweep: sweep.Options{Steps: []int{0, 5}, Endpoints: 2, Position: datapath.PositionLast}}}
	run, err := r.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(run.Sweeps) != 1 || len(run.Sweeps[0].Steps) != 2 || len(run.Results) != 2 {
		t.Fatalf("%d sweeps, %d results; want 1 sweep of 2 steps, a result per step", len(run.Sweeps), len(run.Results))
	}
	for i, res := range run.Results {
		if want := []int{0, 5}[i]; res.Services != want || len(res.Samples) != 2 {
			t.Errorf("result %d: %d Services, %d samples; want %d Services, 2 samples", i, res.Services, len(res.Samples), want)
		}
	}
	if tgt.dp.held.Services == 0 {
		t.Error("the datapath was never programmed")
	}
	if len(run.Notes) != 1 || !strings.Contains(run.Notes[0], "metrics API absent") {
		t.Errorf("notes %q: want the one usage note", run.Notes)
	}
	if run.Plan.Order != (&ServiceScale{}).Order() {
		t.Errorf("order %q", run.Plan.Order)
	}
	disk, err := results.Load(out)
	if err != nil || disk.Status != results.StatusComplete || len(disk.Notes) != 1 {
		t.Fatalf("on disk: %v, %+v", err, disk)
	}
}
