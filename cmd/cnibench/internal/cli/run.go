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

// measureFlags are the flags of a schedule's command (run, sweep, churn)
// that every target and schedule has.
type measureFlags struct {
	o          suite.Options
	target     string
	tests      string
	placements string
	out        string
	mode       string
	kinds      map[string]scheduleKind // every schedule's own flags
}

// measureCommands are the registered schedules' commands.
func measureCommands(g *globals) []*cobra.Command {
	var cmds []*cobra.Command
	for _, e := range scheduleList() {
		if e.use != "" {
			cmds = append(cmds, newMeasureCmd(g, e))
		}
	}
	return cmds
}

// newMeasureCmd builds a schedule's command: the flags every target and
// schedule has, each schedule's and target's own (annotated; those of
// another schedule hidden, those of a target grouped in --help) and one
// RunE, execute.
func newMeasureCmd(g *globals, own scheduleEntry) *cobra.Command {
	mf := &measureFlags{kinds: map[string]scheduleKind{}}
	targets := map[string]targetKind{}
	cmd := &cobra.Command{Use: own.use, Short: own.short, Long: own.long, Args: cobra.NoArgs}
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if err := targetFlag(mf.target); err != nil {
			return err
		}
		return mf.execute(cmd, targets[mf.target], own)
	}
	f := cmd.Flags()
	mf.register(f, own)
	for _, e := range scheduleList() {
		before := flagNames(f)
		mf.kinds[e.name] = e.new()
		mf.kinds[e.name].register(f)
		annotateNew(f, before, annSchedule, e.name)
	}
	for _, name := range targetNames() {
		before := flagNames(f)
		targets[name] = targetRegistry[name].new(g)
		targets[name].register(f)
		annotateNew(f, before, annTarget, name)
	}
	reprogramsSchedules(f)
	annotateProfileScale(f)
	// A flag of another schedule is hidden from --help; run still takes
	// them all (run --tests churn churns).
	f.VisitAll(func(fl *pflag.Flag) {
		if ss := fl.Annotations[annSchedule]; len(ss) > 0 && !slices.Contains(ss, own.name) {
			fl.Hidden = true
		}
	})
	cmd.SetUsageTemplate(groupedUsage)
	return cmd
}

// register adds the flags every schedule has, worded for own.
func (mf *measureFlags) register(f *pflag.FlagSet, own scheduleEntry) {
	help := map[string]string{
		"profile":    strings.Join(suite.ProfileNames(), ", ") + ": the tests, placements, durations, rounds and lab scenarios (see Profiles above, or cnibench profiles; on --target k8s, security runs as twins of the cluster and tke fills the column of the cluster's datapath, docs/k8s.md and docs/profiles.md)",
		"rounds":     "rounds of the whole plan (default: the profile's); auto[:MAX]: add rounds after the fifth until every question of the profile is conclusive, at most MAX (default 15)",
		"placements": "comma-separated placements (default: all)",
	}
	for name, text := range own.flagHelp {
		help[name] = text
	}
	f.StringVar(&mf.target, "target", defaultTarget, "where to run: "+strings.Join(targetNames(), ", ")+" (lab: the local lab; k8s: a cluster through kubeconfig, see docs/k8s.md)")
	f.StringVar(&mf.o.Profile, "profile", "quick", help["profile"])
	if own.tests {
		f.StringVar(&mf.tests, "tests", "", "comma-separated tests (default: the profile's)")
	}
	f.StringVar(&mf.placements, "placements", "", help["placements"])
	f.DurationVar(&mf.o.Duration, "duration", 0, "measured time per sample (default: the profile's)")
	f.DurationVar(&mf.o.Warmup, "warmup", 0, "unmeasured time before each sample (default: the profile's)")
	f.Var(roundsFlag{&mf.o.Rounds, &mf.o.AutoRounds, own.autoRounds}, "rounds", help["rounds"])
	// cilium connectivity perf's name for its samples per test
	// (docs/profiles.md): the same setting, so one of the two is given.
	f.Var(roundsFlag{&mf.o.Rounds, &mf.o.AutoRounds, own.autoRounds}, "samples", "cilium connectivity perf's name for --rounds")
	f.Lookup("samples").Hidden = true
	f.StringVar(&mf.mode, "mode", "", "RR/CRR wait mode: blocking (netperf semantics, default) or busy-poll")
	f.IntVar(&mf.o.UDPMessageSize, "msg-size", 0, "UDP_STREAM datagram bytes (cilium connectivity perf's name; default: the profile's, 1400, or 1024 for connectivity-perf as cilium-cli)")
	appliesTo(f, annSchedule, []string{scheduleRounds}, "msg-size") // only rounds run UDP_STREAM
	f.StringVar(&mf.out, "out", "", "results directory (default cnibench-results/<run id>)")
}

// request checks the flags, picks the schedule (run --tests churn
// churns) and resolves it and its plan.
func (mf *measureFlags) request(cmd *cobra.Command, own scheduleEntry) (*runRequest, error) {
	flags := cmd.Flags()
	if v, _ := flags.GetDuration("duration"); flags.Changed("duration") && v <= 0 {
		return nil, fmt.Errorf("--duration must be positive, got %s", v)
	}
	req := &runRequest{opts: mf.o, runID: newRunID(), out: mf.out, flags: flags, progress: cmd.ErrOrStderr(), stdout: cmd.OutOrStdout()}
	req.opts.Tests = splitList(mf.tests)
	req.opts.Placements = splitList(mf.placements)
	req.opts.Mode = engine.Mode(mf.mode)
	if own.tests {
		own = pickSchedule(req.opts.Tests, own)
	}
	if flags.Changed("samples") && flags.Changed("rounds") {
		return nil, errors.New("--samples is cilium connectivity perf's name for --rounds: give one of them")
	}
	line, err := applyProfileEnv(flags, strings.ToLower(strings.TrimSpace(mf.o.Profile)), mf.target, own.name, os.Getenv)
	if err != nil {
		return nil, err
	}
	if line != "" {
		fmt.Fprintln(req.progress, line)
	}
	req.opts.Duration, req.opts.Rounds, req.opts.AutoRounds = mf.o.Duration, mf.o.Rounds, mf.o.AutoRounds
	if mf.o.AutoRounds > 0 && !own.autoRounds {
		return nil, fmt.Errorf("--rounds auto: only for interleaved rounds (run), not %s: give a number", own.title)
	}
	if err := checkApplies(flags, mf.target, own.name); err != nil {
		return nil, err
	}
	kind := mf.kinds[own.name]
	sched, plan, err := kind.resolve(flags, req.opts)
	if err != nil {
		return nil, err
	}
	req.entry, req.schedule, req.plan, req.about = own, sched, plan, kind.about()
	if own.name == scheduleRounds {
		if req.schedule, req.about, err = mf.profileScale(flags, plan, sched); err != nil {
			return nil, err
		}
	}
	if req.out == "" {
		req.out = filepath.Join("cnibench-results", req.runID)
	}
	return req, nil
}

// execute is the one run path of every target and schedule: resolve the
// request, open the target's scenarios, run the schedule, close the
// targets and write the reports.
func (mf *measureFlags) execute(cmd *cobra.Command, tk targetKind, own scheduleEntry) error {
	req, err := mf.request(cmd, own)
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	scs, err := tk.open(ctx, req)
	if err != nil || len(scs) == 0 {
		req.releaseOut(false)
		return err
	}
	runner := &suite.Runner{Scenarios: scs, Plan: req.plan, OutDir: req.out, RunID: req.runID, Progress: req.progress, Schedule: req.schedule}
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

// newRunID names a run by its start second and the process; a variable so
// that tests comparing two runs' output can hold it still.
var newRunID = func() string {
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
