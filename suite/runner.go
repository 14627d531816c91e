package suite

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/cnibench/cnibench/results"
)

// Runner runs a plan on a target and keeps the results document on disk up
// to date after every sample.
type Runner struct {
	Target   Target
	Plan     *Plan
	OutDir   string
	RunID    string
	Progress io.Writer // one line per sample; nil for silence
}

// Run takes every sample of the plan. On ctx cancellation it stops after
// the sample in progress is abandoned, marks the run interrupted and keeps
// everything completed. The returned Run is also on disk.
func (r *Runner) Run(ctx context.Context) (*results.Run, error) {
	run := &results.Run{
		SchemaVersion: results.SchemaVersion,
		RunID:         r.RunID,
		Status:        results.StatusRunning,
		Start:         time.Now().UTC(),
		Tool:          results.CurrentTool(),
		Environment:   results.CollectEnvironment(),
		Target:        results.Target{Kind: r.Target.Kind(), Details: r.Target.Details()},
		Plan:          r.Plan.Plan,
	}
	// One Result per (test, placement), filled round by round.
	index := map[[2]string]int{}
	for _, spec := range r.Plan.Specs {
		for _, name := range r.Plan.Placements {
			pl, err := r.Target.Placement(name)
			if err != nil {
				return r.finish(run, err)
			}
			index[[2]string{spec.Name, name}] = len(run.Results)
			run.Results = append(run.Results, results.Result{
				Test:      spec.Name,
				Placement: pl,
				Options:   r.Plan.EngineOptions(spec, pl.ServerAddr),
			})
		}
	}
	if err := results.Save(r.OutDir, run); err != nil {
		return run, err
	}

	total, done := r.Plan.Samples(), 0
	for round := 1; round <= r.Plan.Rounds; round++ {
		for _, spec := range r.Plan.Specs {
			for _, name := range r.Plan.Placements {
				if ctx.Err() != nil {
					return r.finish(run, ctx.Err())
				}
				res := &run.Results[index[[2]string{spec.Name, name}]]
				done++
				r.progress("[%d/%d] round %d %-16s %-24s ", done, total, round, spec.Name, name)
				sample := r.sample(ctx, round, res)
				if ctx.Err() != nil {
					// An abandoned sample measured nothing worth keeping.
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
	return r.finish(run, nil)
}

// sample takes one measurement; failures are recorded in the sample, not
// fatal, so one broken path does not lose the rest of the suite.
func (r *Runner) sample(ctx context.Context, round int, res *results.Result) results.Sample {
	s := results.Sample{Round: round, Start: time.Now().UTC()}
	client, err := r.Target.Agent(res.Placement.Client)
	if err != nil {
		s.Error, s.End = err.Error(), time.Now().UTC()
		return s
	}
	c0, cerr0 := r.Target.CPUSeconds(res.Placement.Client)
	s0, serr0 := r.Target.CPUSeconds(res.Placement.Server)
	timeout := time.Duration(res.Options.Duration+res.Options.Warmup) + 30*time.Second
	rctx, cancel := context.WithTimeout(ctx, timeout)
	out, err := client.Run(rctx, res.Options)
	cancel()
	c1, cerr1 := r.Target.CPUSeconds(res.Placement.Client)
	s1, serr1 := r.Target.CPUSeconds(res.Placement.Server)
	s.End = time.Now().UTC()
	if err != nil {
		s.Error = err.Error()
		return s
	}
	s.Engine = out
	if cerr0 == nil && cerr1 == nil {
		s.ClientCPUSec = c1 - c0
	}
	if serr0 == nil && serr1 == nil {
		s.ServerCPUSec = s1 - s0
	}
	return s
}

func (r *Runner) finish(run *results.Run, cause error) (*results.Run, error) {
	run.End = time.Now().UTC()
	switch {
	case cause == nil:
		run.Status = results.StatusComplete
	case errors.Is(cause, context.Canceled):
		run.Status = results.StatusInterrupted
		run.Error = "interrupted"
	default:
		run.Status = results.StatusFailed
		run.Error = cause.Error()
	}
	if err := results.Save(r.OutDir, run); err != nil {
		return run, err
	}
	if cause != nil {
		return run, cause
	}
	return run, nil
}

func (r *Runner) progress(format string, a ...any) {
	if r.Progress != nil {
		fmt.Fprintf(r.Progress, format, a...)
	}
}
