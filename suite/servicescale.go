package suite

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/cnibench/cnibench/datapath"
	"github.com/cnibench/cnibench/engine"
	"github.com/cnibench/cnibench/results"
	"github.com/cnibench/cnibench/sweep"
)

// ServiceScaleTest is the --tests name of the Service-scale sweep, a test
// of its own kind: it reprograms the datapath between measurements, so it
// does not mix with the plain tests in one run.
const ServiceScaleTest = "service-scale"

// ScaleTests are measured at every step of a Service-scale sweep:
// keep-alive and short-connection RPS, connection setup rate and latency,
// and request/response latency.
var ScaleTests = []string{"HTTP_RPS_C64", "HTTP_RPS_SHORT_C64", "TCP_CRR", "TCP_RR"}

// ScaleTarget is a target whose Service datapath a sweep can reprogram on
// every node (the lab and k8s targets implement it).
type ScaleTarget interface {
	Target
	// ScaleDatapath is the Service datapath of every node (one sweep
	// step programs and verifies them all) and the test Services every
	// step must keep.
	ScaleDatapath() (datapath.Datapath, []datapath.Service, error)
	// ScalePlacement is the pod-to-service placement the sweep measures
	// on: other-node where the target has two nodes, same-node where it
	// has one (a one-node cluster); the results record it.
	ScalePlacement() (string, error)
	// ConntrackUsage is the client node's conntrack count (-1: not loaded)
	// and size, and the eBPF flow map's entries.
	ConntrackUsage(ctx context.Context) (count, max, flows int, err error)
	// EphemeralPorts is the client's local port range size.
	// ConntrackUsage and EphemeralPorts return an error wrapping
	// errors.ErrUnsupported when the target cannot read the value: the
	// conntrack preflight is then skipped with a note in the results.
	EphemeralPorts() (int, error)
}

// ScaleRunner runs a Service-scale sweep on one or more scenarios, each a
// lab with its own Service datapath: at each step every datapath is
// programmed and verified, then the plan's tests run in rounds with the
// scenarios interleaved (step k on A, B, C, then step k+1), so drift of a
// shared machine hits every datapath alike. Every sample is saved as it
// finishes.
type ScaleRunner struct {
	Scenarios []Scenario
	Plan      *Plan // tests (default ScaleTests), rounds and durations
	Sweep     sweep.Options
	OutDir    string
	RunID     string
	Progress  io.Writer
}

// scaleState is one scenario's sweep in progress.
type scaleState struct {
	sc        Scenario
	tgt       ScaleTarget
	sw        *sweep.Sweeper
	rec       int    // index in Run.Sweeps
	placement string // ScalePlacement
}

// Run preflights every scenario (map capacity, conntrack), then sweeps.
func (r *ScaleRunner) Run(ctx context.Context) (*results.Run, error) {
	if len(r.Scenarios) == 0 {
		return nil, errors.New("no scenario to run")
	}
	if err := r.Sweep.Validate(); err != nil {
		return nil, err
	}
	run := &results.Run{
		SchemaVersion: results.SchemaVersion,
		RunID:         r.RunID,
		Status:        results.StatusRunning,
		Start:         time.Now().UTC(),
		Tool:          results.CurrentTool(),
		Environment:   results.CollectEnvironment(),
		Plan:          r.Plan.Plan,
	}
	run.Plan.Placements = nil // the placements the targets sweep on, below
	run.Plan.Order = "Service-scale steps, then rounds, then tests, then scenarios (interleaved)"
	base := &Runner{Plan: r.Plan}
	start := time.Now()
	elapsed := func() string { return fmtElapsed(time.Since(start)) }

	// Preflight everything before anything is programmed.
	var states []*scaleState
	for _, sc := range r.Scenarios {
		tgt, ok := sc.Target.(ScaleTarget)
		if !ok {
			return nil, fmt.Errorf("scenario %s: its target cannot run a Service-scale sweep", sc.Name)
		}
		dp, test, err := tgt.ScaleDatapath()
		if err != nil {
			return nil, fmt.Errorf("scenario %s: %w", sc.Name, err)
		}
		placement, err := tgt.ScalePlacement()
		if err != nil {
			return nil, fmt.Errorf("scenario %s: %w", sc.Name, err)
		}
		if !slices.Contains(run.Plan.Placements, placement) {
			run.Plan.Placements = append(run.Plan.Placements, placement)
		}
		rec := results.Sweep{Scenario: sc.Name, Datapath: dp.Name(), Placement: placement, Options: r.Sweep}
		if rec.ConntrackExpected, rec.ConntrackMax, err = r.conntrackPreflight(ctx, tgt, dp.Name()); unknown(err) {
			// A target that cannot read the table (a cluster) must not
			// fail the sweep: the check is skipped and says so.
			note := "conntrack preflight skipped: " + err.Error()
			rec.Notes = append(rec.Notes, note)
			r.progress("%s: %s\n", sc.Name, note)
		} else if err != nil {
			return nil, fmt.Errorf("scenario %s: %w", sc.Name, err)
		}
		sw, err := sweep.New(dp, test, r.Sweep)
		if err != nil {
			return nil, fmt.Errorf("scenario %s: %w", sc.Name, err)
		}
		rec.Options = sw.Options()
		run.Scenarios = append(run.Scenarios, results.Scenario{Name: sc.Name,
			Target: results.Target{Kind: tgt.Kind(), Details: tgt.Details()}})
		run.Notes = append(run.Notes, targetNotes(sc)...)
		run.Sweeps = append(run.Sweeps, rec)
		states = append(states, &scaleState{sc: sc, tgt: tgt, sw: sw, rec: len(states), placement: placement})
	}
	run.Target = run.Scenarios[0].Target
	if err := results.Save(r.OutDir, run); err != nil {
		return run, err
	}

	steps := r.Sweep.Steps
	total := len(steps) * len(states) * len(r.Plan.Specs) * r.Plan.Rounds
	done := 0
	var failed []error
	for k, n := range steps {
		// Program and verify step k on every datapath still sweeping.
		var measured []*scaleState
		for _, st := range states {
			if st.sw.Done() {
				continue
			}
			rec := &run.Sweeps[st.rec]
			r.progress("[%s] ", elapsed())
			step, err := st.sw.Next(ctx, r.progress)
			var stop *sweep.Stopped
			switch {
			case errors.As(err, &stop):
				rec.Stopped = stop.Reason
				r.progress("%s\n", stop.Reason)
			case ctx.Err() != nil:
				return r.finish(run, ctx.Err())
			case err != nil:
				rec.Error = err.Error()
				failed = append(failed, fmt.Errorf("scenario %s: %w", st.sc.Name, err))
			default:
				rec.Steps = append(rec.Steps, results.SweepStep{Step: step, Conntrack: -1})
				measured = append(measured, st)
			}
			if err := results.Save(r.OutDir, run); err != nil {
				return run, err
			}
		}
		if len(measured) == 0 {
			continue
		}
		// One Result per (test, scenario) at this step.
		type key struct{ test, scenario string }
		index := map[key]int{}
		for _, spec := range r.Plan.Specs {
			for _, st := range measured {
				pl, err := st.tgt.Placement(st.placement)
				if err != nil {
					return r.finish(run, fmt.Errorf("scenario %s: %w", st.sc.Name, err))
				}
				index[key{spec.Name, st.sc.Name}] = len(run.Results)
				run.Results = append(run.Results, r.result(spec, pl, st.sc.Name, n))
			}
		}
		r.progress("[%s] step %d/%d (%d Services): measuring %d tests × %d rounds on %s\n", elapsed(),
			k+1, len(steps), n, len(r.Plan.Specs), r.Plan.Rounds, scenarioNames(measured))
		for round := 1; round <= r.Plan.Rounds; round++ {
			for _, spec := range r.Plan.Specs {
				for _, st := range measured {
					if ctx.Err() != nil {
						return r.finish(run, ctx.Err())
					}
					res := &run.Results[index[key{spec.Name, st.sc.Name}]]
					done++
					r.progress("[%d/%d] %d Services round %d %-18s %-16s ", done, total, n, round, spec.Name, st.sc.Name)
					sample := base.sample(ctx, st.tgt, round, res)
					if ctx.Err() != nil {
						r.progress("interrupted\n")
						return r.finish(run, ctx.Err())
					}
					res.Samples = append(res.Samples, sample)
					if err := results.Save(r.OutDir, run); err != nil {
						return run, err
					}
					r.progress("%s\n", SampleLine(res.Test, sample))
				}
			}
		}
		// What the datapath holds after measuring.
		for _, st := range measured {
			rec := &run.Sweeps[st.rec]
			last := &rec.Steps[len(rec.Steps)-1]
			count, _, flows, err := st.tgt.ConntrackUsage(ctx)
			switch {
			case unknown(err):
				count = ConntrackUnknown // noted once, at the preflight
			case err != nil:
				r.progress("%s: conntrack: %v\n", st.sc.Name, err)
			}
			last.Conntrack, last.FlowEntries = count, flows
		}
		if err := results.Save(r.OutDir, run); err != nil {
			return run, err
		}
	}
	return r.finish(run, errors.Join(failed...))
}

// ConntrackUnknown is a step's conntrack count when the target cannot
// read it (results.SweepStep.Conntrack).
const ConntrackUnknown = -2

// unknown tells whether a ScaleTarget said it cannot read a value (an
// error wrapping errors.ErrUnsupported or ErrUnsupported), as opposed to
// a read that failed.
func unknown(err error) bool {
	return err != nil && (errors.Is(err, errors.ErrUnsupported) || errors.Is(err, ErrUnsupported))
}

// newConnPorts are the test Service ports the new-connection tests dial.
var newConnPorts = map[string]string{"TCP_CRR": "tcp-crr", "HTTP_RPS_SHORT_C64": "http"}

// conntrackPreflight checks, for the datapaths that translate through
// netfilter, that node0's conntrack table can hold every connection the
// new-connection tests may leave behind: one per ephemeral port and
// Service port (TIME_WAIT entries outlive the sample). The table size is a
// host-wide sysctl, so --auto-size cannot raise it: it is an error.
func (r *ScaleRunner) conntrackPreflight(ctx context.Context, tgt ScaleTarget, dp string) (expected, max int, err error) {
	ports := map[string]bool{}
	for _, s := range r.Plan.Specs {
		if p, ok := newConnPorts[s.Name]; ok && (s.HTTP == nil || !s.HTTP.KeepAlive) {
			ports[p] = true
		}
	}
	if len(ports) == 0 {
		return 0, 0, nil
	}
	eph, err := tgt.EphemeralPorts()
	if err != nil {
		return 0, 0, fmt.Errorf("conntrack preflight: %w", err)
	}
	_, max, _, err = tgt.ConntrackUsage(ctx)
	if err != nil {
		return 0, 0, fmt.Errorf("conntrack preflight: %w", err)
	}
	expected = eph * len(ports)
	netfilter := datapath.Netfilter(dp)
	if netfilter && max > 0 && expected > max {
		return expected, max, fmt.Errorf("%s: conntrack preflight: node0's table holds %d entries (nf_conntrack_max, a host-wide sysctl that --auto-size cannot raise) and the new-connection tests may keep %d (%d ephemeral ports × %d Service ports): raise net.netfilter.nf_conntrack_max on the host or leave out TCP_CRR and HTTP_RPS_SHORT_C64",
			dp, max, expected, eph, len(ports))
	}
	return expected, max, nil
}

// result is the empty Result of one test at one step.
func (r *ScaleRunner) result(spec TestSpec, pl results.Placement, scenario string, services int) results.Result {
	res := results.Result{Scenario: scenario, Test: spec.Name, Placement: pl, Services: services}
	switch {
	case spec.IsDNS():
		res.Options = engine.Options{Test: "DNS", Host: pl.ServerAddr, Duration: r.Plan.Duration, Warmup: r.Plan.Warmup}
		res.DNSOptions = r.Plan.DNSOptions(spec, pl.ServerAddr)
	case spec.IsHTTP():
		res.Options = engine.Options{Test: "HTTP", Host: pl.ServerAddr, Duration: r.Plan.Duration, Warmup: r.Plan.Warmup}
		res.HTTPOptions = r.Plan.HTTPOptions(spec, pl.ServerAddr)
	default:
		res.Options = r.Plan.EngineOptions(spec, pl.ServerAddr)
	}
	return res
}

func (r *ScaleRunner) finish(run *results.Run, cause error) (*results.Run, error) {
	return (&Runner{OutDir: r.OutDir}).finish(run, cause)
}

func (r *ScaleRunner) progress(format string, a ...any) {
	if r.Progress != nil {
		fmt.Fprintf(r.Progress, format, a...)
	}
}

func scenarioNames(sts []*scaleState) string {
	var n []string
	for _, s := range sts {
		n = append(n, s.sc.Name)
	}
	return strings.Join(n, ", ")
}

// fmtElapsed prints a duration as m:ss for progress lines.
func fmtElapsed(d time.Duration) string {
	s := int(d.Round(time.Second) / time.Second)
	return fmt.Sprintf("%d:%02d", s/60, s%60)
}
