package suite

import (
	"context"
	"errors"
	"fmt"
	"slices"
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

// A profile's rows at scale (ScaleRows.After): the rounds measure every
// test on every placement and scenario, then the sweep reprograms only
// its scenarios and measures only its tests at each step past 0; step 0
// is programmed and recorded but its numbers are the rounds'.
func TestRowsAtScaleFollowTheRounds(t *testing.T) {
	c := startAgent(t)
	var calls []string
	swept := scaleLoopTarget{&usageTarget{loopTarget: loopTarget{c, &calls, "a"}}, &memDatapath{}}
	other := scaleLoopTarget{&usageTarget{loopTarget: loopTarget{c, &calls, "b"}}, &memDatapath{}}
	plan, err := Options{Tests: []string{"TCP_RR", "TCP_CRR"}, Placements: []string{PodToPodOtherNode, PodToServiceOtherNode}, Rounds: 2, Duration: 100 * time.Millisecond}.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	plan.Warmup = 0
	rows := &ScaleRows{Tests: []string{"TCP_CRR"}, Scenarios: []string{"a"}}
	sched := rows.After(&Rounds{}, sweep.Options{Steps: []int{0, 5, 9}, Endpoints: 2, Position: datapath.PositionLast})
	if rp := ReprogrammingOf(sched); rp == nil || rp.Services != 9 || !rp.KeepPlacements {
		t.Fatalf("reprogramming %+v: want up to 9 Services, keeping the plan's placements", rp)
	}
	if got, want := sched.Estimate(plan, []string{"a", "b"}), time.Duration(2*2*2*2+2*1*1*2)*100*time.Millisecond; got != want {
		t.Errorf("estimate %s, want %s (the rounds' 16 samples and the sweep's 4)", got, want)
	}
	r := &Runner{Scenarios: []Scenario{{Name: "a", Target: swept}, {Name: "b", Target: other}}, Plan: plan, OutDir: t.TempDir(), RunID: "rows", Schedule: sched}
	run, err := r.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(run.Plan.Placements) != 2 {
		t.Errorf("placements %v: the rounds' two must stay", run.Plan.Placements)
	}
	if len(run.Sweeps) != 1 || run.Sweeps[0].Scenario != "a" || !run.Sweeps[0].AfterRounds || len(run.Sweeps[0].Steps) != 3 {
		t.Fatalf("sweeps %+v: want a's, after the rounds, 3 steps recorded", run.Sweeps)
	}
	if other.dp.held.Services != 0 || swept.dp.held.Services == 0 {
		t.Errorf("held: swept %d, other %d Services; want only the swept scenario programmed", swept.dp.held.Services, other.dp.held.Services)
	}
	var rounds, scaled []string
	for _, res := range run.Results {
		at := fmt.Sprintf("%s %s %s@%d×%d", res.Scenario, res.Test, res.Placement.Name(), res.Services, len(res.Samples))
		if res.Services == 0 {
			rounds = append(rounds, at)
		} else {
			scaled = append(scaled, at)
		}
	}
	if len(rounds) != 8 {
		t.Errorf("rounds' results %v: want 2 tests × 2 placements × 2 scenarios", rounds)
	}
	if want := []string{"a TCP_CRR pod-to-service/other-node@5×2", "a TCP_CRR pod-to-service/other-node@9×2"}; !slices.Equal(scaled, want) {
		t.Errorf("sweep's results %v, want %v (step 0 not measured again)", scaled, want)
	}
	if !strings.Contains(run.Plan.Order, "; after them, Service-scale steps") {
		t.Errorf("order %q", run.Plan.Order)
	}

	// None of the rows' scenarios asked: the rounds stand, a note says why.
	rows.Scenarios = []string{"c"}
	r = &Runner{Scenarios: []Scenario{{Name: "b", Target: other}}, Plan: plan, OutDir: t.TempDir(), RunID: "rows2",
		Schedule: rows.After(&Rounds{}, sweep.Options{Steps: []int{0, 5}, Endpoints: 2, Position: datapath.PositionLast})}
	run, err = r.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(run.Sweeps) != 0 || !slices.ContainsFunc(run.Notes, func(n string) bool {
		return strings.Contains(n, "Service-scale rows were not measured: none of their scenarios (c)")
	}) {
		t.Errorf("sweeps %d, notes %q", len(run.Sweeps), run.Notes)
	}
}
