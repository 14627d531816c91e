package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/cnibench/cnibench/engine"
	"github.com/cnibench/cnibench/lab"
	"github.com/cnibench/cnibench/report"
	"github.com/cnibench/cnibench/results"
	"github.com/cnibench/cnibench/suite"
	"github.com/cnibench/cnibench/targets/labtarget"
)

func newRunCmd(g *globals) *cobra.Command {
	var (
		o          suite.Options
		target     string
		tests      string
		placements string
		out        string
		mode       string
		scenarios  string
		lf         labFlags
		kf         k8sFlags
		hs         httpServerFlags
		sf         scaleFlags
	)
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run the benchmark suite and write results.json, report.md and report.html",
		Long: `Run the suite on a target (default: the local lab). If the lab is not up, it is
brought up for the run and taken down afterwards; a lab you started with
'cnibench lab up' is used and left running. Every sample is written to
DIR/results.json as soon as it finishes; Ctrl-C stops cleanly and keeps them.

Tests: ` + strings.Join(suite.TestNames(), ", ") + `, and service-scale (the
  Service-scale sweep: --scale-steps, docs/service-scale.md)
Placements: ` + strings.Join(suite.AllPlacements, ", ") + `, and ` + strings.Join(suite.ServicePlacements, ", ") + `
  when the lab has a Service datapath (--service-datapath, or a scenario like ebpf) and on
  clusters: node0-pod0 dials a ClusterIP whose endpoints are on its own node (same-node,
  what a one-node cluster can run) or on the other node (other-node)
Profiles: ` + profileHelp(),
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if target != "lab" && target != "k8s" {
				return fmt.Errorf("--target %q: want lab or k8s", target)
			}
			flags := cmd.Flags()
			for _, name := range []string{"rounds", "streams"} {
				if v, _ := flags.GetInt(name); flags.Changed(name) && v < 1 {
					return fmt.Errorf("--%s must be at least 1, got %d", name, v)
				}
			}
			for _, name := range []string{"duration"} {
				if v, _ := flags.GetDuration(name); flags.Changed(name) && v <= 0 {
					return fmt.Errorf("--%s must be positive, got %s", name, v)
				}
			}
			o.Tests = splitList(tests)
			if sf.asked(o.Tests) { // a test of its own kind: servicescale.go
				o.Mode = engine.Mode(mode)
				return sf.run(cmd, g, o, &lf, &kf, target, placements, scenarios, out)
			}
			for _, name := range k8sOnlyScaleFlags {
				if flags.Changed(name) {
					return fmt.Errorf("--%s applies to --tests %s only", name, suite.ServiceScaleTest)
				}
			}
			o.Placements = splitList(placements)
			o.Mode = engine.Mode(mode)
			plan, err := o.Resolve()
			if err != nil {
				return err
			}
			if target == "k8s" {
				return runK8s(cmd, &kf, plan, len(o.Placements) == 0, out)
			}
			labCfg, err := lf.config(flags, g)
			if err != nil {
				return err
			}
			// One scenario per lab: without --scenarios, the --lab lab as it
			// is (or as the flags create it).
			labs := []namedLab{{name: labCfg.Name, cfg: labCfg}}
			if names := splitList(scenarios); len(names) > 0 {
				labs = nil
				seen := map[string]bool{}
				for _, n := range names {
					cfg, err := labtarget.ScenarioConfig(n, labCfg)
					if err != nil {
						return err
					}
					if !seen[cfg.Name] {
						seen[cfg.Name] = true
						labs = append(labs, namedLab{name: cfg.Name, cfg: cfg})
					}
				}
			}
			// pod-to-service joins the default placements when a lab has
			// a Service datapath (asked for, or in a running lab's state).
			if len(o.Placements) == 0 {
				for _, l := range labs {
					dp := l.cfg.ServiceDatapath
					if running, err := lab.Load(l.cfg.StateDir, l.name); err == nil {
						dp = running.Config.ServiceDatapath
					}
					if dp != "" {
						plan.Placements = append(plan.Placements, suite.ServicePlacements...)
						break
					}
				}
			}
			if hs.responseSize < 0 || hs.responseSize > 64<<20 {
				return fmt.Errorf("--http-response-size must be in 0..%d bytes, got %d", 64<<20, hs.responseSize)
			}
			if hs.work < 0 {
				return fmt.Errorf("--http-work must not be negative, got %s", hs.work)
			}
			if err := lab.RequirePrivileges(); err != nil {
				return err
			}
			runID := newRunID()
			if out == "" {
				out = filepath.Join("cnibench-results", runID)
			}
			return runSuite(cmd, labs, plan, runID, out, hs)
		},
	}
	f := cmd.Flags()
	f.StringVar(&target, "target", "lab", "where to run: lab, or k8s (a cluster through kubeconfig; see docs/k8s.md)")
	f.StringVar(&o.Profile, "profile", "quick", "quick or standard")
	f.StringVar(&tests, "tests", "", "comma-separated tests (default: the profile's)")
	f.StringVar(&placements, "placements", "", "comma-separated placements (default: all)")
	f.DurationVar(&o.Duration, "duration", 0, "measured time per sample (default: the profile's)")
	f.DurationVar(&o.Warmup, "warmup", 0, "unmeasured time before each sample (default: the profile's)")
	f.IntVar(&o.Rounds, "rounds", 0, "rounds of the whole plan (default: the profile's)")
	f.IntVar(&o.Streams, "streams", 0, "flows of the *_MULTI tests (default 4)")
	f.StringVar(&mode, "mode", "", "RR/CRR wait mode: blocking (netperf semantics, default) or busy-poll")
	f.StringVar(&out, "out", "", "results directory (default cnibench-results/<run id>)")
	f.StringVar(&scenarios, "scenarios", "", "comma-separated lab scenarios run side by side, rounds interleaved: "+strings.Join(labtarget.ScenarioNames(), ", ")+" (each in its own lab named after it)")
	lf.register(f)
	sf.register(f)
	f.IntVar(&hs.responseSize, "http-response-size", 0, "HTTP tests: response body bytes the server agents send (default 512)")
	f.DurationVar(&hs.work, "http-work", 0, "HTTP tests: artificial CPU work per request on the server agents, e.g. 20us (default none)")
	kf.register(f)
	return cmd
}

// writeOutputs prints the tables of a finished (or interrupted) run and
// writes summary.md, report.md and report.html beside results.json.
func writeOutputs(cmd *cobra.Command, out string, run *results.Run) error {
	if run == nil || len(run.Results) == 0 {
		return nil
	}
	fmt.Fprintln(cmd.OutOrStdout())
	if err := report.Table(cmd.OutOrStdout(), run); err != nil {
		return err
	}
	if err := report.WriteSummary(out, run); err != nil {
		return err
	}
	files, err := report.WriteRun(out, run)
	if err != nil {
		return err
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "\nresults: %s\nreport:  %s\n", filepath.Join(out, results.FileName), strings.Join(files, ", "))
	return nil
}

// httpServerFlags say how the server agents' HTTP server answers.
type httpServerFlags struct {
	responseSize int
	work         time.Duration
}

// namedLab is one scenario's lab.
type namedLab struct {
	name string
	cfg  lab.Config
}

func runSuite(cmd *cobra.Command, labs []namedLab, plan *suite.Plan, runID, out string, hs httpServerFlags) (err error) {
	ctx := cmd.Context()
	w := cmd.ErrOrStderr()
	_, statErr := os.Stat(out)
	if err := results.CheckWritable(out); err != nil {
		return err
	}
	createdOut := os.IsNotExist(statErr)
	n := len(labs)
	fmt.Fprintf(w, "cnibench run %s: profile %s, %d scenario(s), %d samples, about %s of measurement\n",
		runID, plan.Profile, n, plan.Samples()*n, (plan.Estimate() * time.Duration(n)).Round(time.Second))

	var scs []suite.Scenario
	defer func() {
		for _, sc := range scs {
			if cerr := sc.Target.(*labtarget.Target).Close(); cerr != nil && err == nil {
				err = cerr
			}
		}
	}()
	for _, l := range labs {
		tgt, err := labtarget.Open(ctx, labtarget.Config{
			Lab:        l.cfg,
			Placements: plan.Placements,
			RunID:      runID,
			Progress:   w,

			HTTPResponseSize: hs.responseSize,
			HTTPWork:         hs.work,
		})
		if err != nil {
			if createdOut {
				_ = os.Remove(out) // only if still empty: nothing half-made
			}
			return err
		}
		scs = append(scs, suite.Scenario{Name: l.name, Target: tgt})
	}

	runner := &suite.Runner{Scenarios: scs, Plan: plan, OutDir: out, RunID: runID, Progress: w}
	run, runErr := runner.Run(ctx)
	if err := writeOutputs(cmd, out, run); err != nil {
		return err
	}
	if errors.Is(runErr, ctx.Err()) && ctx.Err() != nil {
		return fmt.Errorf("interrupted: completed samples are in %s", filepath.Join(out, results.FileName))
	}
	return runErr
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
