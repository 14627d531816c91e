package suite

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/cnibench/cnibench/engine"
	"github.com/cnibench/cnibench/engine/dnsload"
	"github.com/cnibench/cnibench/engine/httpload"
	"github.com/cnibench/cnibench/kinds"
	"github.com/cnibench/cnibench/results"
)

// Scenario is one named datapath configuration and the target it runs on.
type Scenario struct {
	Name   string
	Target Target
}

// Runner runs a plan on one or more scenarios and keeps the results
// document on disk up to date after every sample.
type Runner struct {
	Scenarios []Scenario
	Plan      *Plan
	OutDir    string
	RunID     string
	Progress  io.Writer // one line per sample; nil for silence

	usage usageState // datapath usage reads that failed (usage.go)
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
		Plan:          r.Plan.Plan,
	}
	if len(r.Scenarios) == 0 {
		return nil, errors.New("no scenario to run")
	}
	run.Plan.Order = "rounds, then tests, then placements, then scenarios (interleaved)"
	for _, sc := range r.Scenarios {
		run.Scenarios = append(run.Scenarios, results.Scenario{Name: sc.Name,
			Target: results.Target{Kind: sc.Target.Kind(), Details: sc.Target.Details()}})
		run.Notes = append(run.Notes, targetNotes(sc)...)
	}
	run.Target = run.Scenarios[0].Target
	// One Result per (test, placement, scenario), filled round by round.
	type key struct{ test, placement, scenario string }
	index := map[key]int{}
	for _, spec := range r.Plan.Specs {
		for _, name := range r.Plan.Placements {
			for _, sc := range r.Scenarios {
				pl, err := sc.Target.Placement(name)
				skipped := ""
				if errors.Is(err, ErrUnsupported) {
					path, node, _ := strings.Cut(name, "/")
					pl, skipped, err = results.Placement{Path: path, Node: node}, err.Error(), nil
				}
				if err != nil {
					return r.finish(run, fmt.Errorf("scenario %s: %w", sc.Name, err))
				}
				if skipped == "" {
					skipped = checkTest(sc.Target, spec)
				}
				index[key{spec.Name, name, sc.Name}] = len(run.Results)
				res := r.Plan.newResult(spec, pl, sc.Name)
				res.Skipped = skipped
				run.Results = append(run.Results, res)
			}
		}
	}
	if err := results.Save(r.OutDir, run); err != nil {
		return run, err
	}

	total, done := 0, 0
	for _, res := range run.Results {
		if res.Skipped == "" {
			total += r.Plan.Rounds
		}
	}
	for round := 1; round <= r.Plan.Rounds; round++ {
		for _, spec := range r.Plan.Specs {
			for _, name := range r.Plan.Placements {
				for _, sc := range r.Scenarios {
					if ctx.Err() != nil {
						return r.finish(run, ctx.Err())
					}
					res := &run.Results[index[key{spec.Name, name, sc.Name}]]
					if res.Skipped != "" {
						continue
					}
					done++
					label := name
					if len(r.Scenarios) > 1 {
						label = sc.Name + " " + name
					}
					r.progress("[%d/%d] round %d %-18s %-30s ", done, total, round, spec.Name, label)
					sample := r.sample(ctx, sc.Target, round, res)
					if ctx.Err() != nil {
						// An abandoned sample measured nothing worth keeping.
						r.progress("interrupted\n")
						return r.finish(run, ctx.Err())
					}
					res.Samples = append(res.Samples, sample)
					run.Notes = append(run.Notes, r.takeUsageNotes()...)
					if err := results.Save(r.OutDir, run); err != nil {
						return run, err
					}
					r.progress("%s\n", SampleLine(res.Test, sample))
				}
			}
		}
	}
	return r.finish(run, nil)
}

// sample takes one measurement; failures are recorded in the sample, not
// fatal, so one broken path does not lose the rest of the suite.
func (r *Runner) sample(ctx context.Context, tgt Target, round int, res *results.Result) results.Sample {
	s := results.Sample{Round: round, Start: time.Now().UTC()}
	client, err := tgt.Agent(res.Placement.Client)
	if err != nil {
		s.Error, s.End = err.Error(), time.Now().UTC()
		return s
	}
	c0, cerr0 := tgt.CPUSeconds(res.Placement.Client)
	s0, serr0 := tgt.CPUSeconds(res.Placement.Server)
	timeout := time.Duration(res.Options.Duration+res.Options.Warmup) + 30*time.Second
	us, mark := r.startUsage(ctx, tgt, res, round)
	rctx, cancel := context.WithTimeout(ctx, timeout)
	var out *engine.Result
	var hout *httpload.Result
	var dout *dnsload.Result
	var kout any
	switch {
	case res.KindOptions != nil:
		kout, err = client.RunKind(rctx, res.Kind(), res.KindOptions)
	case res.DNSOptions != nil:
		dout, err = client.RunDNS(rctx, *res.DNSOptions)
	case res.HTTPOptions != nil:
		hout, err = client.RunHTTP(rctx, *res.HTTPOptions)
	default:
		out, err = client.Run(rctx, res.Options)
	}
	cancel()
	usage := r.endUsage(ctx, us, mark, res, round)
	c1, cerr1 := tgt.CPUSeconds(res.Placement.Client)
	s1, serr1 := tgt.CPUSeconds(res.Placement.Server)
	s.End = time.Now().UTC()
	if err != nil {
		s.Error = err.Error()
		return s
	}
	s.Engine, s.HTTP, s.DNS, s.Result = out, hout, dout, kout
	if k, ok := kinds.Of(s.Measured()); ok && k.Check != nil {
		if err := k.Check(s.Measured()); err != nil {
			return results.Sample{Round: round, Start: s.Start, End: s.End, Error: err.Error()}
		}
	}
	s.DatapathUsage = usage
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
	case errors.Is(cause, context.Canceled), errors.Is(cause, context.DeadlineExceeded):
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

// newResult is the empty Result of one test on one placement: the options
// of the test's engine kind aimed at the placement's server.
func (p *Plan) newResult(spec TestSpec, pl results.Placement, scenario string) results.Result {
	res := results.Result{Scenario: scenario, Test: spec.Name, Placement: pl}
	k, _ := kinds.Lookup(spec.Kind)
	switch {
	case k.Options != nil:
		t := kinds.Test{Name: spec.Name, Kind: spec.Kind, About: spec.About, Multi: spec.Multi, Template: spec.Template}
		res.Options = engine.Options{Test: engine.Test(spec.Name), Host: pl.ServerAddr, Duration: p.Duration, Warmup: p.Warmup}
		res.KindOptions = k.Options(t, pl.ServerAddr, kinds.Plan{Duration: time.Duration(p.Duration), Warmup: time.Duration(p.Warmup),
			Streams: p.Streams, Mode: string(p.Mode)})
	case spec.IsDNS():
		res.Options = engine.Options{Test: "DNS", Host: pl.ServerAddr, Duration: p.Duration, Warmup: p.Warmup}
		res.DNSOptions = p.DNSOptions(spec, pl.ServerAddr)
	case spec.IsHTTP():
		res.Options = engine.Options{Test: "HTTP", Host: pl.ServerAddr, Duration: p.Duration, Warmup: p.Warmup}
		res.HTTPOptions = p.HTTPOptions(spec, pl.ServerAddr)
	default:
		res.Options = p.EngineOptions(spec, pl.ServerAddr)
	}
	return res
}
