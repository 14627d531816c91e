package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/cnibench/cnibench/datapath"
	"github.com/cnibench/cnibench/datapath/ebpf"
	"github.com/cnibench/cnibench/lab"
	"github.com/cnibench/cnibench/results"
	"github.com/cnibench/cnibench/suite"
	"github.com/cnibench/cnibench/sweep"
	"github.com/cnibench/cnibench/targets/k8starget"
	"github.com/cnibench/cnibench/targets/labtarget"
)

// defaultScaleScenarios are swept when --scenarios is not given.
const defaultScaleScenarios = "iptables,nftables,ebpf"

// scaleFlags are the flags of `run --tests service-scale`.
type scaleFlags struct {
	steps       string
	endpoints   int
	position    string
	seed        uint64
	maxStepTime time.Duration
	autoSize    bool
	bpfMapMax   int
	// --target k8s only (k8s_scale.go)
	syncTimeout         time.Duration
	syncVerify          string
	allowClusterChanges bool
	apiQPS              float64
	apiBurst            int
}

func (f *scaleFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.steps, "scale-steps", "0,1000,5000,10000,20000,30000", "service-scale: cumulative dummy Service counts, increasing")
	fs.IntVar(&f.endpoints, "endpoints-per-service", sweep.DefaultEndpoints, "service-scale: endpoints of each dummy Service")
	fs.StringVar(&f.position, "service-position", "random", "service-scale: the test Service among the dummies: random, first or last")
	fs.Uint64Var(&f.seed, "scale-seed", 0, "service-scale: seed of the random test Service position (0: draw one; the header and results record it)")
	fs.DurationVar(&f.maxStepTime, "max-step-time", sweep.DefaultMaxStepTime, "service-scale: stop a datapath's sweep when its next step's programming is predicted to take longer")
	fs.BoolVar(&f.autoSize, "auto-size", false, "service-scale: grow the eBPF maps to the largest step instead of refusing it")
	fs.IntVar(&f.bpfMapMax, "bpf-map-max", 0, "service-scale: entries of the eBPF service and backend maps (default 65536)")
	fs.DurationVar(&f.syncTimeout, "sync-timeout", k8starget.DefaultSyncTimeout, "service-scale on k8s: how long every node may take to hold a step's Services")
	fs.StringVar(&f.syncVerify, "sync-verify", k8starget.SyncNode, "service-scale on k8s: node (a privileged probe pod per node reads kube-proxy's or Cilium's state) or api (the API server only)")
	fs.Float64Var(&f.apiQPS, "api-qps", k8starget.DefaultScaleQPS, "service-scale on k8s: API writes per second creating and deleting the dummy Services and EndpointSlices")
	fs.IntVar(&f.apiBurst, "api-burst", 0, "service-scale on k8s: burst of those writes (default: --api-qps)")
	fs.BoolVar(&f.allowClusterChanges, "allow-cluster-changes", false, "service-scale on k8s: raise Cilium's bpf-lb-map-max (and restart Cilium) when the largest step needs it; reverted at the end")
}

// k8sOnlyScaleFlags make sense on a cluster only.
var k8sOnlyScaleFlags = []string{"sync-timeout", "sync-verify", "allow-cluster-changes", "api-qps", "api-burst"}

// labOnlyScaleFlags size the lab's eBPF maps; a cluster's are its own.
var labOnlyScaleFlags = []string{"auto-size", "bpf-map-max"}

// asked tells whether --tests asks for the sweep.
func (f *scaleFlags) asked(tests []string) bool {
	for _, t := range tests {
		if strings.EqualFold(t, suite.ServiceScaleTest) {
			return true
		}
	}
	return false
}

// options parses the sweep flags.
func (f *scaleFlags) options() (sweep.Options, error) {
	o := sweep.Options{Endpoints: f.endpoints, Position: f.position, Seed: f.seed, MaxStepTime: f.maxStepTime}
	for _, s := range splitList(f.steps) {
		n, err := strconv.Atoi(strings.ReplaceAll(s, "_", ""))
		if err != nil {
			return o, fmt.Errorf("--scale-steps: %q is not a number", s)
		}
		o.Steps = append(o.Steps, n)
	}
	if len(o.Steps) == 0 {
		return o, errors.New("--scale-steps: no step given")
	}
	if f.endpoints == 0 {
		return o, errors.New("--endpoints-per-service must be at least 1")
	}
	if f.maxStepTime <= 0 {
		return o, fmt.Errorf("--max-step-time must be positive, got %s", f.maxStepTime)
	}
	if f.bpfMapMax < 0 {
		return o, fmt.Errorf("--bpf-map-max must be positive, got %d", f.bpfMapMax)
	}
	return o, o.Validate()
}

// plan parses the sweep flags and resolves the tests every step measures
// (suite.ScaleTests) and the candidate placements, in order of preference:
// the one given with --placements, else other-node, then same-node (the
// target sweeps on the first it can host).
func (f *scaleFlags) plan(o suite.Options) (sweep.Options, *suite.Plan, error) {
	opt, err := f.options()
	if err != nil {
		return opt, nil, err
	}
	o.Tests = suite.ScaleTests
	if len(o.Placements) == 0 {
		o.Placements = []string{suite.PodToServiceOtherNode, suite.PodToServiceSameNode}
	}
	if o.Rounds == 0 {
		o.Rounds = 3 // verdicts against step 0 need repeated samples
	}
	plan, err := o.Resolve()
	return opt, plan, err
}

// run is `cnibench run --tests service-scale`: one lab per datapath
// scenario, swept step by step with the datapaths interleaved.
func (f *scaleFlags) run(cmd *cobra.Command, g *globals, o suite.Options, lf *labFlags, kf *k8sFlags, target, placements, scenarios, out string) (err error) {
	if len(o.Tests) > 1 {
		return fmt.Errorf("--tests: %s is a test of its own kind (it reprograms the datapath between steps) and cannot mix with %s: run them separately",
			suite.ServiceScaleTest, strings.Join(without(o.Tests, suite.ServiceScaleTest), ","))
	}
	o.Placements = splitList(placements)
	if len(o.Placements) > 1 {
		return fmt.Errorf("--placements: %s measures one placement (default: %s, or %s on a one-node target)", suite.ServiceScaleTest, suite.PodToServiceOtherNode, suite.PodToServiceSameNode)
	}
	for _, p := range o.Placements {
		if !suite.IsServicePlacement(p) {
			return fmt.Errorf("--placements: %s measures %s or %s, not %s", suite.ServiceScaleTest, suite.PodToServiceOtherNode, suite.PodToServiceSameNode, p)
		}
	}
	if target == "k8s" {
		return f.runK8s(cmd, o, kf, out)
	}
	for _, name := range k8sOnlyScaleFlags {
		if cmd.Flags().Changed(name) {
			return fmt.Errorf("--%s applies to --target k8s only", name)
		}
	}
	opt, plan, err := f.plan(o)
	if err != nil {
		return err
	}
	labCfg, err := lf.config(cmd.Flags(), g)
	if err != nil {
		return err
	}
	if strings.TrimSpace(scenarios) == "" {
		scenarios = defaultScaleScenarios
	}
	var labs []namedLab
	seen := map[string]bool{}
	for _, n := range splitList(scenarios) {
		cfg, err := labtarget.ScenarioConfig(n, labCfg)
		if err != nil {
			return err
		}
		// With an explicit --lab, the scenario labs are named after it too,
		// so two sweeps (or a sweep and another run) never share a lab.
		if cmd.Flags().Changed("lab") {
			cfg.Name = g.labName + cfg.Name
			if err := cfg.Validate(); err != nil {
				return fmt.Errorf("--lab %s + scenario %s: %w (use a shorter --lab)", g.labName, n, err)
			}
		}
		if cfg.ServiceDatapath == "" {
			return fmt.Errorf("--scenarios: %s has no Service datapath to sweep (use %s)", n, datapath.Choices())
		}
		if !seen[cfg.Name] {
			seen[cfg.Name] = true
			labs = append(labs, namedLab{name: cfg.Name, cfg: cfg})
		}
	}
	if err := lab.RequirePrivileges(); err != nil {
		return err
	}
	runID := newRunID()
	if out == "" {
		out = filepath.Join("cnibench-results", runID)
	}
	_, statErr := os.Stat(out)
	if err := results.CheckWritable(out); err != nil {
		return err
	}
	createdOut := os.IsNotExist(statErr)

	ctx, w := cmd.Context(), cmd.ErrOrStderr()
	perStep := time.Duration(plan.Samples()) * time.Duration(plan.Duration+plan.Warmup) * time.Duration(len(labs))
	position := opt.Position
	if position == "random" {
		position = fmt.Sprintf("random, --scale-seed %d", opt.Seed)
	}
	fmt.Fprintf(w, "cnibench run %s: service-scale sweep of %s over %s Services (%d endpoints each, test Service %s), %d rounds: about %s of measurement plus programming\n",
		runID, strings.Join(labNames(labs), ", "), f.steps, opt.Endpoints, position, plan.Rounds,
		(perStep * time.Duration(len(opt.Steps))).Round(time.Second))

	var scs []suite.Scenario
	defer func() {
		for _, sc := range scs {
			if cerr := sc.Target.(*labtarget.Target).Close(); cerr != nil && err == nil {
				err = cerr
			}
		}
	}()
	for _, l := range labs {
		tgt, err := labtarget.Open(ctx, labtarget.Config{Lab: l.cfg, Placements: []string{scalePlacement(plan.Placements, l)}, RunID: runID, Progress: w,
			EBPF: ebpf.Options{AutoSize: f.autoSize, LBMapMax: f.bpfMapMax}})
		if err != nil {
			if createdOut {
				_ = os.Remove(out)
			}
			return err
		}
		scs = append(scs, suite.Scenario{Name: l.name, Target: tgt})
	}
	runner := &suite.ScaleRunner{Scenarios: scs, Plan: plan, Sweep: opt, OutDir: out, RunID: runID, Progress: w}
	run, runErr := runner.Run(ctx)
	if run == nil && createdOut {
		_ = os.RemoveAll(out) // refused before anything was measured
	}
	if err := writeOutputs(cmd, out, run); err != nil {
		return err
	}
	if errors.Is(runErr, ctx.Err()) && ctx.Err() != nil {
		return fmt.Errorf("interrupted: completed samples are in %s", filepath.Join(out, results.FileName))
	}
	return runErr
}

// scalePlacement picks a lab's sweep placement among the candidates: the
// first, unless it is other-node and the lab (running, or as the flags
// create it) has one node.
func scalePlacement(candidates []string, l namedLab) string {
	nodes := l.cfg.Nodes
	if running, err := lab.Load(l.cfg.StateDir, l.name); err == nil {
		nodes = len(running.Nodes)
	}
	if candidates[0] == suite.PodToServiceOtherNode && nodes < 2 && len(candidates) > 1 {
		return candidates[1]
	}
	return candidates[0]
}

func labNames(labs []namedLab) []string {
	var n []string
	for _, l := range labs {
		n = append(n, l.name)
	}
	return n
}

func without(list []string, drop string) []string {
	var out []string
	for _, s := range list {
		if !strings.EqualFold(s, drop) {
			out = append(out, s)
		}
	}
	return out
}
