package suite

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/cnibench/cnibench/engine/kinds"
	"github.com/cnibench/cnibench/internal/procstat"
	"github.com/cnibench/cnibench/results"
)

// Scenario is one named datapath configuration and the target it runs on.
type Scenario struct {
	Name   string
	Target Target
	// Parts are Name parsed into its parts (by the CLI, once): the run
	// records them, and the churn asks them whether it churns.
	Parts results.ScenarioName
}

// Runner runs a plan on one or more scenarios through one sample loop and
// keeps the results document on disk up to date after every sample. Its
// Schedule decides what is measured in which order: interleaved rounds
// (the default), or a Service-scale sweep; either way every sample's
// notes and datapath usage reach the run.
type Runner struct {
	Scenarios []Scenario
	Plan      *Plan
	Schedule  Schedule // nil: &Rounds{}
	OutDir    string
	RunID     string
	Progress  io.Writer // one line per sample; nil for silence

	// store writes the document (results.Save; tests inject failures).
	store func(dir string, run *results.Run) error
	saved int // samples in the last document written

	usage usageState      // datapath usage reads that failed (usage.go)
	moved map[string]bool // server moves noted (readdress.go)
	idled map[string]bool // scenarios whose idle nodes were read (nodecpu.go)
	run   *results.Run    // the document being filled
	done  int             // samples taken (progress)
	total int             // samples planned (progress)
}

// Run prepares the schedule (preflights, refusing before anything is
// written) and takes every sample. On ctx cancellation it stops after the
// sample in progress is abandoned, marks the run interrupted and keeps
// everything completed. The returned Run is also on disk.
func (r *Runner) Run(ctx context.Context) (*results.Run, error) {
	if len(r.Scenarios) == 0 {
		return nil, errors.New("no scenario to run")
	}
	sched := r.Schedule
	if sched == nil {
		sched = &Rounds{}
	}
	r.run = &results.Run{
		SchemaVersion: results.SchemaVersion,
		RunID:         r.RunID,
		Status:        results.StatusRunning,
		Start:         time.Now().UTC(),
		Tool:          results.CurrentTool(),
		Environment:   results.CollectEnvironment(),
		Plan:          r.Plan.Plan,
		Dir:           r.OutDir, // the files it names (flame graphs) are there
	}
	r.run.Plan.Order = sched.Order()
	total, err := sched.Prepare(ctx, r)
	if err != nil {
		return nil, err
	}
	r.total, r.done = total, 0
	for _, sc := range r.Scenarios {
		r.run.Scenarios = append(r.run.Scenarios, results.Scenario{Name: sc.Name, Parts: sc.Parts, Checks: targetChecks(sc),
			Target: results.Target{Kind: sc.Target.Kind(), Details: sc.Target.Details()}})
		r.run.Notes = append(r.run.Notes, targetNotes(sc)...)
	}
	r.run.Target = r.run.Scenarios[0].Target
	r.saved = -1 // nothing on disk yet
	if err := r.save(); err != nil {
		return r.run, err
	}
	err = sched.Measure(ctx, r)
	if err == nil {
		err = r.flameGraphs(ctx) // after the rounds: sampling never touches a measured sample
	}
	return r.finish(r.run, err)
}

// addResult appends an empty Result for the schedule to fill; it returns
// its index for take.
func (r *Runner) addResult(res results.Result) int {
	r.run.Results = append(r.run.Results, res)
	return len(r.run.Results) - 1
}

// take is the one sample loop's body: one sample of Result i on a
// scenario, appended and saved, with a progress line that starts with
// label. It returns ctx's error when the run was cancelled (the abandoned
// sample is dropped: it measured nothing worth keeping).
func (r *Runner) take(ctx context.Context, sc Scenario, i, round int, label string) error {
	return r.takeDuring(ctx, sc, i, round, label, nil)
}

// during is something a schedule runs for the whole of a sample (the churn
// of a churned scenario): started just before it, stopped just after, and
// what it returns goes into the sample before it is saved.
type during func(ctx context.Context) (stop func(*results.Sample))

// takeDuring is take with d running during the sample (d may be nil).
func (r *Runner) takeDuring(ctx context.Context, sc Scenario, i, round int, label string, d during) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	r.idleNodes(ctx, sc) // before its first sample: the nodes idle
	r.done++
	r.progress("[%d/%d] %s", r.done, r.total, label)
	res := &r.run.Results[i]
	// The lab's traffic runs on this machine: record how busy it was.
	before, berr := procstat.Read()
	var stop func(*results.Sample)
	if d != nil {
		stop = d(ctx)
	}
	sample := r.sample(ctx, sc.Target, round, res)
	if stop != nil {
		stop(&sample)
	}
	if after, err := procstat.Read(); err == nil && berr == nil && sc.Target.Kind() == "lab" {
		sample.Host = hostLoad(before, after, sample)
	}
	if ctx.Err() != nil {
		r.progress("interrupted\n")
		return ctx.Err()
	}
	res.Samples = append(res.Samples, sample)
	r.run.Notes = append(r.run.Notes, r.takeUsageNotes()...)
	if err := r.save(); err != nil {
		r.progress("not saved\n")
		return err
	}
	r.progress("%s\n", SampleLine(res.Test, sample))
	return nil
}

// save writes the document as it is now. A failure (disk full, directory
// gone read-only) stops the run, since nothing measured after it could be
// kept, and says what the file on disk still holds.
func (r *Runner) save() error {
	store := r.store
	if store == nil {
		store = results.Save
	}
	if err := store(r.OutDir, r.run); err != nil {
		kept := "no results were saved"
		if r.saved >= 0 {
			kept = fmt.Sprintf("it keeps the %d samples saved before", r.saved)
		}
		return fmt.Errorf("%w; the run stopped: %s", err, kept)
	}
	r.saved = 0
	for _, res := range r.run.Results {
		r.saved += len(res.Samples)
	}
	return nil
}

// sample takes one measurement; failures are recorded in the sample, not
// fatal, so one broken path does not lose the rest of the suite. On a
// target that keeps its agents (AgentKeeper) a dead agent fails only the
// sample it died in.
func (r *Runner) sample(ctx context.Context, tgt Target, round int, res *results.Result) results.Sample {
	s := results.Sample{Round: round, Start: time.Now().UTC()}
	keeper, _ := tgt.(AgentKeeper)
	watched := res.Placement
	if len(res.Pairs) > 1 {
		watched = watchedPairs(res.Pairs) // pairs.go
	}
	sctx, stopWatch := ctx, context.CancelFunc(func() {})
	if keeper != nil { // agents.go
		var err error
		if sctx, stopWatch, err = r.keepAgents(ctx, keeper, watched); err != nil {
			s.Error, s.End = err.Error(), time.Now().UTC()
			return s
		}
		r.reaim(tgt, res) // a fresh agent may listen elsewhere
	}
	defer stopWatch()
	if len(res.Pairs) > 1 {
		return r.samplePairs(ctx, sctx, tgt, keeper, watched, round, res, s)
	}
	client, err := tgt.Agent(res.Placement.Client)
	if err != nil {
		s.Error, s.End = err.Error(), time.Now().UTC()
		return s
	}
	c0, cerr0 := tgt.CPUSeconds(res.Placement.Client)
	s0, serr0 := tgt.CPUSeconds(res.Placement.Server)
	p0, perr0 := procstat.Read() // read beside the cgroups: what their CPUs spent
	nodes := startNodes(tgt)     // and every node's (nodecpu.go)
	timeout := sampleBound(res)
	us, mark := r.startUsage(ctx, tgt, res, round)
	rctx, cancel := context.WithTimeout(sctx, timeout)
	out, err := client.RunKind(rctx, res.Kind(), res.Options)
	cancel()
	usage := r.endUsage(ctx, us, mark, res, round)
	c1, cerr1 := tgt.CPUSeconds(res.Placement.Client)
	s1, serr1 := tgt.CPUSeconds(res.Placement.Server)
	p1, perr1 := procstat.Read()
	s.Nodes = nodes.end()
	s.End = time.Now().UTC()
	if keeper != nil && ctx.Err() == nil {
		if died := checkAgents(ctx, keeper, res.Placement, err != nil); died != nil {
			err = died // the cause, whatever the interrupted call returned
		}
	}
	if err != nil {
		s.Error = err.Error()
		return s
	}
	s.Result = out
	if err := checkResult(s.Measured()); err != nil {
		return results.Sample{Round: round, Start: s.Start, End: s.End, Error: err.Error()}
	}
	s.DatapathUsage = usage
	if cerr0 == nil && cerr1 == nil {
		s.ClientCPUSec = c1 - c0
	}
	if serr0 == nil && serr1 == nil {
		s.ServerCPUSec = s1 - s0
	}
	if p, ok := tgt.(CPUPinner); ok && perr0 == nil && perr1 == nil && tgt.Kind() == "lab" {
		s.Pinned = pinnedCPU(p, p0, p1)
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
	if err := r.save(); err != nil {
		if cause != nil { // a failed save fails again: the first error says it all
			return run, cause
		}
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
	if k, ok := kinds.Lookup(spec.Kind); ok && k.Options != nil {
		t := kinds.Test{Name: spec.Name, Kind: spec.Kind, About: spec.About, Multi: spec.Multi, Template: spec.Template}
		res.Options = k.Options(t, pl.ServerAddr, p.kindPlan(pl))
	}
	return res
}

// kindPlan is what a kind's options take from the plan on placement pl.
func (p *Plan) kindPlan(pl results.Placement) kinds.Plan {
	return kinds.Plan{Duration: time.Duration(p.Duration), Warmup: time.Duration(p.Warmup),
		Streams: p.Streams, UDPMessageSize: p.UDPMessageSize, Mode: string(p.Mode), PortShare: p.portShare(pl), Ports: p.Ports}
}

// sampleBound is the longest one sample of res may take: its options'
// warm-up and duration, and half a minute to connect and report.
func sampleBound(res *results.Result) time.Duration {
	if o, ok := res.Options.(kinds.Runs); ok {
		return o.Runner().Bound(30 * time.Second)
	}
	return 30 * time.Second
}

// portShare is the placement's own share of the client's ephemeral ports
// (engineapi.PortShare): the placements measure from the same client pod
// to the same server pod, by pod IP and by ClusterIP, and without shares a
// connection of one meets the server's TIME_WAIT socket of the other's on
// the same four-tuple and waits a second for its SYN to be retried. nil
// with one placement (nothing to keep apart).
func (p *Plan) portShare(pl results.Placement) *kinds.PortShare {
	i := slices.Index(p.Placements, pl.Name())
	if len(p.Placements) < 2 || i < 0 {
		return nil
	}
	return &kinds.PortShare{Index: i, Count: len(p.Placements)}
}
