package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/cnibench/cnibench/results"
	"github.com/cnibench/cnibench/suite"
	"github.com/cnibench/cnibench/targets/k8starget"
)

// runK8s is `cnibench run --target k8s --tests service-scale`: dummy
// Services with EndpointSlices on a cluster, each step verified on every
// node (node probes) or in the API server (--sync-verify api), the test
// Service measured on pod-to-service/other-node. The Cilium LB-map
// preflight runs before anything is created; a change it makes with
// --allow-cluster-changes is reverted when the target closes (also on
// errors and Ctrl-C) and recorded in the results.
func (f *scaleFlags) runK8s(cmd *cobra.Command, o suite.Options, kf *k8sFlags, out string) (err error) {
	for _, name := range append(append([]string{}, labOnlyFlags...), labOnlyScaleFlags...) {
		if fl := cmd.Flags().Lookup(name); fl != nil && fl.Changed {
			return fmt.Errorf("--%s is a lab setting: it does not apply to --target k8s", name)
		}
	}
	opt, plan, err := f.plan(o)
	if err != nil {
		return err
	}
	runID := newRunID()
	w := progressOut(cmd.ErrOrStderr())
	cfg := kf.config(plan.Placements, runID, w)
	cfg.Scale = &k8starget.ScaleConfig{SyncVerify: f.syncVerify, SyncTimeout: f.syncTimeout,
		AllowClusterChanges: f.allowClusterChanges, Services: opt.Steps[len(opt.Steps)-1], Endpoints: opt.Endpoints,
		QPS: f.apiQPS, Burst: f.apiBurst}
	if f.apiQPS <= 0 { // 0 would mean the default to ScaleConfig
		return fmt.Errorf("--api-qps must be in 1..%d, got %g", k8starget.MaxScaleQPS, f.apiQPS)
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	if kf.dryRun {
		return dryRunK8s(cmd.OutOrStdout(), w, cfg)
	}
	if out == "" {
		out = filepath.Join("cnibench-results", runID)
	}
	cl, access, createdOut, err := kf.connect(cfg, out, w)
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	position := opt.Position
	if position == "random" {
		position = fmt.Sprintf("random, --scale-seed %d", opt.Seed)
	}
	sync := "on every node (node probes)"
	if cfg.Scale.SyncVerify == k8starget.SyncAPI {
		sync = "in the API server only"
	}
	fmt.Fprintf(w, "cnibench run %s on cluster %q: service-scale sweep over %s Services (%d endpoints each, test Service %s), written at %g/s (burst %d, %d writers), synced %s within %s, %d rounds: about %s of measurement plus programming\n",
		runID, cl.Context, f.steps, opt.Endpoints, position, cfg.Scale.QPS, cfg.Scale.Burst, cfg.Scale.Workers, sync, cfg.Scale.SyncTimeout, plan.Rounds,
		(time.Duration(plan.Samples()) * time.Duration(plan.Duration+plan.Warmup) * time.Duration(len(opt.Steps))).Round(time.Second))
	tgt, err := k8starget.Open(ctx, cfg, cl.Clientset, access, cl.Context)
	if err != nil {
		if createdOut {
			_ = os.Remove(out) // only if still empty
		}
		return openFailed(ctx, err)
	}
	defer func() { // on every way out; a second Close is a no-op
		if cerr := tgt.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	name := cl.Context
	if name == "" {
		name = "k8s"
	}
	runner := &suite.Runner{Scenarios: []suite.Scenario{{Name: name, Target: tgt}}, Plan: plan, Schedule: &suite.ServiceScale{Sweep: opt}, OutDir: out, RunID: runID, Progress: w}
	run, runErr := runner.Run(ctx)
	closeErr := closeAndRecord(tgt, out, run)
	if run == nil && createdOut {
		_ = os.RemoveAll(out) // refused before anything was measured
	}
	if err := writeOutputs(cmd, out, run); err != nil {
		return err
	}
	if errors.Is(runErr, ctx.Err()) && ctx.Err() != nil {
		return errors.Join(fmt.Errorf("interrupted: completed samples are in %s (the run's cluster objects are removed)", filepath.Join(out, results.FileName)), closeErr)
	}
	return errors.Join(runErr, closeErr)
}

// closeAndRecord closes the target before the results are final, so what
// Close did (the dummies deleted, a cluster change reverted) is in the
// target details of results.json.
func closeAndRecord(tgt *k8starget.Target, out string, run *results.Run) error {
	err := tgt.Close()
	if run == nil || len(run.Scenarios) == 0 {
		return err
	}
	d := tgt.Details()
	for i := range run.Scenarios {
		run.Scenarios[i].Target.Details = d
	}
	run.Target = run.Scenarios[0].Target
	if ch := tgt.ClusterChange(); ch != nil {
		for i := range run.Sweeps {
			run.Sweeps[i].Notes = append(run.Sweeps[i].Notes, "--allow-cluster-changes: "+ch.String())
		}
	}
	if serr := results.Save(out, run); serr != nil {
		return errors.Join(err, serr)
	}
	return err
}
