package cli

import (
	"errors"
	"fmt"
	"github.com/spf13/pflag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/cnibench/cnibench/engine"
	"github.com/cnibench/cnibench/report"
	"github.com/cnibench/cnibench/results"
	"github.com/cnibench/cnibench/suite"
)

// measureFlags are the flags of run and sweep that every target has.
type measureFlags struct {
	o          suite.Options
	target     string
	tests      string
	placements string
	out        string
	mode       string
	sf         scaleFlags // the sweep's (servicescale.go)
	cf         churnFlags // the churn schedule's (churn.go)
}

func newRunCmd(g *globals) *cobra.Command {
	return newMeasureCmd(g, scheduleRounds, &cobra.Command{
		Use:   "run",
		Short: "Run the benchmark suite and write results.json, report.md and report.html",
		Long: `Run the suite on a target (default: the local lab). If the lab is not up, it is
brought up for the run and taken down afterwards; a lab you started with
'cnibench lab up' is used and left running. Every sample is written to
DIR/results.json as soon as it finishes; Ctrl-C (or SIGTERM) stops cleanly,
keeps them, takes down what the run brought up and exits 130 (143); a second
one exits at once, naming the 'lab down' to run (README: Recovery). A sample
whose agent dies fails with the cause and a fresh agent takes the next.
Exit status: 0 every sample measured; 4 the samples stand but the teardown
failed; 5 the run went to the end but some samples failed (each cause in
results.json); 1 any other error (results.json unwritable, lab busy, ...).

Tests: ` + strings.Join(suite.TestNames(), ", ") + `, service-scale (the
  Service-scale sweep, the same as 'cnibench sweep': see its --help), and churn
  (` + strings.Join(suite.ChurnTests, ", ") + ` with and without a controlled churn of
  --churn-services Services at --churn-rate changes a second, each datapath's lab
  beside its churned twin "X+churn"; default scenarios ` + defaultChurnScenarios + `; see
  docs/churn.md)
Placements: ` + strings.Join(suite.AllPlacements, ", ") + `, and ` + strings.Join(suite.ServicePlacements, ", ") + `
  when the lab has a Service datapath (--service-datapath, or a scenario like ebpf) and on
  clusters: node0-pod0 dials a ClusterIP whose endpoints are on its own node (same-node,
  what a one-node cluster can run) or on the other node (other-node)
Profiles: ` + profileHelp(),
	})
}

func newSweepCmd(g *globals) *cobra.Command {
	return newMeasureCmd(g, scheduleSweep, &cobra.Command{
		Use:   "sweep",
		Short: "Service-scale sweep: how the datapath degrades as dummy Services are added",
		Long: `Add dummy Services step by step (--scale-steps) and, at every step, program and
verify the Service datapath on every node, then measure ` + strings.Join(suite.ScaleTests, ", ") + `
through the test Service on pod-to-service/other-node (same-node on a one-node
target), in rounds, the datapaths interleaved. On the lab each --scenarios
entry is a lab with its own Service datapath (default ` + defaultScaleScenarios + `); on a
cluster (--target k8s) the dummies are real Services with EndpointSlices.
Every sample is saved as it finishes. Also 'cnibench run --tests service-scale'.
See docs/service-scale.md.`,
	})
}

// newMeasureCmd builds run or sweep: the flags every target has, each
// target's own (annotated, grouped in --help) and one RunE, execute.
func newMeasureCmd(g *globals, schedule string, cmd *cobra.Command) *cobra.Command {
	var mf measureFlags
	kinds := map[string]targetKind{}
	cmd.Args = cobra.NoArgs
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if err := targetFlag(mf.target); err != nil {
			return err
		}
		return mf.execute(cmd, kinds[mf.target], schedule)
	}
	f := cmd.Flags()
	f.StringVar(&mf.target, "target", defaultTarget, "where to run: "+strings.Join(targetNames(), ", ")+" (lab: the local lab; k8s: a cluster through kubeconfig, see docs/k8s.md)")
	profileHelp, roundsHelp := strings.Join(suite.ProfileNames(), ", ")+": the tests, placements, durations, rounds and lab scenarios (see Profiles above; on --target k8s, security runs as twins of the cluster, docs/k8s.md)", "rounds of the whole plan (default: the profile's); auto[:MAX]: add rounds after the fifth until every question of the profile is conclusive, at most MAX (default 15)"
	if schedule == scheduleSweep {
		profileHelp, roundsHelp = "quick or standard: the sample durations", "rounds at every step (default 5, the fewest a verdict needs)"
	}
	f.StringVar(&mf.o.Profile, "profile", "quick", profileHelp)
	if schedule == scheduleRounds {
		f.StringVar(&mf.tests, "tests", "", "comma-separated tests (default: the profile's)")
	}
	if schedule == scheduleRounds {
		f.StringVar(&mf.placements, "placements", "", "comma-separated placements (default: all)")
	} else {
		f.StringVar(&mf.placements, "placements", "", "the one placement to measure: "+suite.PodToServiceOtherNode+" (default) or "+suite.PodToServiceSameNode)
	}
	f.DurationVar(&mf.o.Duration, "duration", 0, "measured time per sample (default: the profile's)")
	f.DurationVar(&mf.o.Warmup, "warmup", 0, "unmeasured time before each sample (default: the profile's)")
	f.Var(roundsFlag{&mf.o.Rounds, &mf.o.AutoRounds, schedule == scheduleRounds}, "rounds", roundsHelp)
	f.IntVar(&mf.o.Streams, "streams", 0, "flows of the *_MULTI tests (default 4)")
	f.StringVar(&mf.mode, "mode", "", "RR/CRR wait mode: blocking (netperf semantics, default) or busy-poll")
	f.StringVar(&mf.out, "out", "", "results directory (default cnibench-results/<run id>)")
	f.StringVar(&mf.o.FlameGraph, "flame-graph", "", "a test of the run whose kernel and user CPU stacks are sampled on the client's and server's CPUs (perf) in one extra, unmeasured sample per scenario and placement after the rounds; flame graphs in the HTML report, folded stacks in DIR/flamegraphs (lab)")
	appliesTo(f, annSchedule, []string{scheduleRounds}, "streams", "flame-graph")
	mf.sf.register(f)
	mf.cf.register(f)
	for _, name := range targetNames() {
		before := flagNames(f)
		kinds[name] = targetRegistry[name].new(g)
		kinds[name].register(f)
		withTarget(f, before, name)
	}
	// A flag of the other schedule is hidden from --help; run still takes
	// the sweep's (run --tests service-scale sweeps).
	f.VisitAll(func(fl *pflag.Flag) {
		if ss := fl.Annotations[annSchedule]; len(ss) > 0 && !slices.Contains(ss, schedule) {
			fl.Hidden = true
		}
	})
	cmd.SetUsageTemplate(groupedUsage)
	return cmd
}

// execute is the one run path of every target and schedule: check the
// flags apply, resolve the plan, open the target's scenarios, run the
// schedule, close the targets and write the reports.
func (mf *measureFlags) execute(cmd *cobra.Command, tk targetKind, schedule string) (err error) {
	flags := cmd.Flags()
	for _, name := range []string{"streams"} {
		if v, _ := flags.GetInt(name); flags.Changed(name) && v < 1 {
			return fmt.Errorf("--%s must be at least 1, got %d", name, v)
		}
	}
	if v, _ := flags.GetDuration("duration"); flags.Changed("duration") && v <= 0 {
		return fmt.Errorf("--duration must be positive, got %s", v)
	}
	req := &runRequest{opts: mf.o, runID: newRunID(), out: mf.out, flags: flags, progress: cmd.ErrOrStderr(), stdout: cmd.OutOrStdout()}
	req.opts.Tests = splitList(mf.tests)
	req.opts.Placements = splitList(mf.placements)
	req.opts.Mode = engine.Mode(mf.mode)
	if mf.sf.asked(req.opts.Tests) {
		schedule = scheduleSweep // run --tests service-scale
	}
	if mf.cf.asked(req.opts.Tests) && schedule == scheduleRounds {
		schedule = scheduleChurn // run --tests churn
	}
	if mf.o.AutoRounds > 0 && schedule != scheduleRounds {
		return fmt.Errorf("--rounds auto: only for interleaved rounds (run), not the Service-scale sweep or the churn: give a number")
	}
	if err := checkApplies(flags, mf.target, schedule); err != nil {
		return err
	}
	if schedule == scheduleSweep {
		opt, plan, err := mf.sf.plan(req.opts)
		if err != nil {
			return err
		}
		req.sweep, req.plan, req.steps = &opt, plan, mf.sf.steps
	} else if schedule == scheduleChurn {
		opt, plan, err := mf.cf.plan(req.opts)
		if err != nil {
			return err
		}
		req.churn, req.plan = &opt, plan
	} else if req.plan, err = req.opts.Resolve(); err != nil {
		return err
	}
	if req.out == "" {
		req.out = filepath.Join("cnibench-results", req.runID)
	}
	ctx := cmd.Context()
	scs, err := tk.open(ctx, req)
	if err != nil || len(scs) == 0 {
		req.releaseOut(false)
		return err
	}
	runner := &suite.Runner{Scenarios: scs, Plan: req.plan, OutDir: req.out, RunID: req.runID, Progress: req.progress}
	switch {
	case req.sweep != nil:
		runner.Schedule = &suite.ServiceScale{Sweep: *req.sweep}
	case req.churn != nil:
		runner.Schedule = &suite.Churn{Options: *req.churn}
	case req.twins != nil:
		runner.Schedule = req.twins
	}
	run, runErr := runner.Run(ctx)
	var saveErr *results.SaveError
	saveFailed := errors.As(runErr, &saveErr)
	closeErr, resaveErr := closeScenarios(scs, req.out, run, !saveFailed)
	if closeErr != nil {
		closeErr = &teardownError{err: closeErr, out: req.out, cleanup: req.cleanup}
	}
	closeErr = errors.Join(closeErr, resaveErr) // a save that failed is no teardown
	if run == nil {
		req.releaseOut(true) // refused before anything was measured
	}
	if saveFailed { // the reports would fail the same way
		return errors.Join(runErr, closeErr)
	}
	if err := writeOutputs(cmd, req.out, run); err != nil {
		return errors.Join(err, closeErr)
	}
	if ctx.Err() != nil && (runErr == nil || errors.Is(runErr, ctx.Err())) {
		// Also when the signal came after the last sample (while tearing
		// down): the exit status says the run was stopped.
		return errors.Join(fmt.Errorf(msgInterrupted+"%s", filepath.Join(req.out, results.FileName), closedNote(scs)), closeErr)
	}
	if runErr == nil && closeErr == nil {
		return failedSamples(run, req.out)
	}
	return errors.Join(runErr, closeErr)
}

// closeRecorder is a target whose Close changes what the results must say
// (a cluster's objects removed, a cluster change reverted): closeScenarios
// lets it record that before the results are final.
type closeRecorder interface {
	RecordClose(run *results.Run, scenario string)
}

// closeScenarios closes every scenario's target, lets it record what
// Close did, records a failed teardown in the run (its status would
// otherwise read "complete" with a lab or cluster objects left behind) and
// saves the results again if anything was recorded (and save: the
// results directory still takes them). It returns the teardown's error
// and that save's apart: a full disk is not a failed teardown.
func closeScenarios(scs []suite.Scenario, out string, run *results.Run, save bool) (closeErr, saveErr error) {
	var closeErrs []error
	recorded := false
	for _, sc := range scs {
		if err := sc.Target.Close(); err != nil {
			closeErrs = append(closeErrs, fmt.Errorf("scenario %s: %w", sc.Name, err))
		}
		if rc, ok := sc.Target.(closeRecorder); ok && run != nil && len(run.Scenarios) > 0 {
			rc.RecordClose(run, sc.Name)
			recorded = true
		}
	}
	closeErr = errors.Join(closeErrs...)
	if closeErr != nil && run != nil {
		run.Teardown = oneLine(closeErr.Error())
		recorded = true
	}
	if recorded && run != nil && save {
		saveErr = results.Save(out, run)
	}
	return closeErr, saveErr
}

// closedNote says, on an interrupted run, what closing removed.
func closedNote(scs []suite.Scenario) string {
	for _, sc := range scs {
		if _, ok := sc.Target.(closeRecorder); ok {
			return " (the run's cluster objects are removed)"
		}
	}
	return ""
}

// writeOutputs prints the tables of a finished (or interrupted) run and
// writes summary.md, report.md and report.html beside results.json.
func writeOutputs(cmd *cobra.Command, out string, run *results.Run) error {
	if run == nil || len(run.Results) == 0 {
		return nil
	}
	// One report serves the tables, the files and the answers.
	rep, err := report.Build([]report.Input{{Run: run}}, report.Options{})
	if err != nil {
		return err
	}
	fmt.Fprintln(cmd.OutOrStdout())
	if err := report.TableOf(cmd.OutOrStdout(), rep); err != nil {
		return err
	}
	if err := report.WriteSummary(out, run); err != nil {
		return err
	}
	files, err := report.Write(out, rep, report.DefaultFormats)
	if err != nil {
		return err
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "\nresults: %s\nreport:  %s\n", filepath.Join(out, results.FileName), strings.Join(files, ", "))
	report.WriteAnswers(cmd.OutOrStdout(), rep)
	return nil
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func newRunID() string {
	return time.Now().UTC().Format("20060102-150405") + fmt.Sprintf("-%04x", os.Getpid()&0xffff)
}

// profileHelp lists the profiles as --help shows them, from suite.Profiles.
func profileHelp() string {
	var parts []string
	for _, p := range suite.Profiles {
		parts = append(parts, p.Name+" ("+p.About+")")
	}
	return strings.Join(parts, "; ")
}
