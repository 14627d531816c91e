package cli

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/cnibench/cnibench/datapath"
	"github.com/cnibench/cnibench/datapath/ebpf"
	"github.com/cnibench/cnibench/lab"
	"github.com/cnibench/cnibench/results"
	"github.com/cnibench/cnibench/suite"
	"github.com/cnibench/cnibench/targets/labtarget"
	"github.com/cnibench/cnibench/targets/labtarget/part"
)

func init() {
	registerTarget("lab", "Lab flags", func(g *globals) targetKind { return &labKind{g: g} })
}

// labKind is the local lab as a --target: one lab per scenario, brought
// up for the run unless it is running.
type labKind struct {
	g         *globals
	lf        labFlags
	scenarios string
	hs        httpServerFlags
	autoSize  bool
	bpfMapMax int
	pinning   string
}

// httpServerFlags say how the server agents' HTTP server answers.
type httpServerFlags struct {
	responseSize int
	work         time.Duration
}

// namedLab is one scenario's lab: the scenario as the user named it (the
// report's column, "iptables") and its lab (cfg.Name, short: "ipt").
type namedLab struct {
	name  string
	named results.ScenarioName
	cfg   lab.Config
	parts []part.Part // the scenario's, opened by its run
}

func (k *labKind) register(fs *pflag.FlagSet) {
	fs.StringVar(&k.scenarios, "scenarios", "", "comma-separated lab scenarios run side by side, rounds interleaved: "+strings.Join(labtarget.ScenarioNames(), ", ")+" (each in its own lab named after it; sweep default "+defaultScaleScenarios+")")
	k.lf.register(fs)
	fs.IntVar(&k.hs.responseSize, "http-response-size", 0, "HTTP tests: response body bytes the server agents send (default 512)")
	fs.DurationVar(&k.hs.work, "http-work", 0, "HTTP tests: artificial CPU work per request on the server agents, e.g. 20us (default none)")
	fs.BoolVar(&k.autoSize, "auto-size", false, "grow the eBPF maps to the largest step instead of refusing it")
	fs.IntVar(&k.bpfMapMax, "bpf-map-max", 0, "entries of the eBPF service and backend maps (default 65536)")
	fs.StringVar(&k.pinning, "cpu-pinning", labtarget.PinSplit, "where the agents run: split (clients on CPU 0, servers on CPU 1, as bench/ pins the C tools) or none (floating, as a cluster's pods)")
	appliesTo(fs, annSchedule, []string{scheduleReprograms}, "auto-size", "bpf-map-max")
	// A sweep's Service datapaths are its --scenarios.
	appliesTo(fs, annSchedule, []string{scheduleRounds}, "service-datapath")
}

// open checks the flags, brings up (or reuses) one lab per scenario and
// opens its target; on an error the labs opened so far are closed.
func (k *labKind) open(ctx context.Context, req *runRequest) (scs []suite.Scenario, err error) {
	labs, err := k.labs(req)
	if err != nil {
		return nil, err
	}
	if !req.onePlacement() && len(req.opts.Placements) == 0 && anyServiceDatapath(labs) && !hasServicePlacement(req.plan.Placements) {
		// pod-to-service joins the default placements when a lab has a
		// Service datapath (asked for, or in a running lab's state),
		// unless the profile already chose its Service placements.
		req.plan.Placements = append(req.plan.Placements, suite.ServicePlacements...)
	}
	if k.hs.responseSize < 0 || k.hs.responseSize > 64<<20 {
		return nil, fmt.Errorf("--http-response-size must be in 0..%d bytes, got %d", 64<<20, k.hs.responseSize)
	}
	if k.hs.work < 0 {
		return nil, fmt.Errorf("--http-work must not be negative, got %s", k.hs.work)
	}
	if !slices.Contains(labtarget.PinningNames, k.pinning) {
		return nil, fmt.Errorf("--cpu-pinning must be %s, got %q", strings.Join(labtarget.PinningNames, " or "), k.pinning)
	}
	if k.bpfMapMax < 0 {
		return nil, fmt.Errorf("--bpf-map-max must be positive, got %d", k.bpfMapMax)
	}
	if err := lab.RequirePrivileges(); err != nil {
		return nil, err
	}
	if err := req.claimOut(); err != nil {
		return nil, err
	}
	for _, l := range labs {
		if _, err := lab.Load(l.cfg.StateDir, l.cfg.Name); err == nil {
			continue // a lab from 'lab up': the run leaves it up, so must the advice
		}
		req.cleanup = append(req.cleanup, labDownCommand(k.g, l.cfg.Name))
	}
	k.g.intr.cleansUp(req.cleanup...)
	k.header(req, labs)
	defer func() {
		if err != nil {
			cerr, _ := closeScenarios(scs, req.out, nil, false)
			if ctx.Err() != nil {
				// Ctrl-C during bring-up or agent start: an interruption,
				// not the error of the step it cut short.
				err = errors.New(msgInterruptedOpen)
			}
			err, scs = errors.Join(err, cerr), nil
		}
	}()
	for _, l := range labs {
		cfg := labtarget.Config{Lab: l.cfg, Parts: l.parts, Placements: req.plan.Placements, RunID: req.runID, Progress: req.progress,
			HTTPResponseSize: k.hs.responseSize, HTTPWork: k.hs.work, CPUPinning: k.pinning, Pairs: req.plan.PairCount()}
		if req.onePlacement() {
			cfg.Placements = []string{scalePlacement(req.plan.Placements, l)}
		}
		if req.reprograms() {
			// A profile's rows at scale grow the maps as TKE's
			// AUTO_FIX_LB_MAP did (--auto-size is the sweep's flag).
			cfg.EBPF = ebpf.Options{AutoSize: k.autoSize || !req.onePlacement(), LBMapMax: k.bpfMapMax}
		}
		tgt, err := labtarget.Open(ctx, cfg)
		if err != nil {
			return scs, err
		}
		scs = append(scs, suite.Scenario{Name: l.name, Parts: l.named, Target: tgt})
	}
	return scs, nil
}

// labs is one lab per scenario: without --scenarios, the schedule's
// default scenarios (the sweep's and the churn's: defaultScaleScenarios)
// or the profile's, else the --lab lab as it is (or as the flags create
// it); the schedule adds the scenarios it measures beside them (the
// churn's twins), and one that reprograms needs a Service datapath in
// each.
func (k *labKind) labs(req *runRequest) ([]namedLab, error) {
	labCfg, err := k.lf.config(req.flags, k.g)
	if err != nil {
		return nil, err
	}
	if labCfg, err = pairPods(req, labCfg); err != nil {
		return nil, err
	}
	list := splitList(k.scenarios)
	if len(list) == 0 {
		list = splitList(req.entry.scenarios)
	}
	if len(list) == 0 {
		// A profile may compare scenarios (datapaths: iptables vs ebpf).
		if prof, err := suite.LookupProfile(req.plan.Profile); err == nil {
			list = prof.Scenarios
		}
	}
	if len(list) == 0 {
		return []namedLab{{name: labCfg.Name, named: results.ScenarioName{labCfg.Name}, cfg: labCfg}}, nil
	}
	names, err := parseScenarios(list)
	if err != nil {
		return nil, err
	}
	var labs []namedLab
	seen := map[string]bool{}
	for _, n := range suite.ExpandScenarios(req.schedule, names) {
		l, err := k.scenarioLab(req, n, labCfg)
		if err != nil {
			return nil, err
		}
		if !seen[l.cfg.Name] {
			seen[l.cfg.Name] = true
			labs = append(labs, l)
		}
	}
	return labs, nil
}

// scenarioLab is scenario n's lab, configured from the flags' labCfg.
func (k *labKind) scenarioLab(req *runRequest, n results.ScenarioName, labCfg lab.Config) (namedLab, error) {
	sc, err := labtarget.ScenarioConfig(n, labCfg)
	if err != nil {
		return namedLab{}, err
	}
	cfg := sc.Lab
	// With an explicit --lab, the scenario labs are named after it too,
	// so two runs with scenarios never share a lab.
	if req.flags.Changed("lab") {
		cfg.Name = part.FitLabName(k.g.labName+cfg.Name, k.g.labName+"/"+n.String())
		if err := cfg.Validate(); err != nil {
			return namedLab{}, fmt.Errorf("--lab %s + scenario %s: %w (use a shorter --lab)", k.g.labName, n, err)
		}
	}
	if rp := req.reprogramming(); rp != nil && cfg.ServiceDatapath == "" {
		return namedLab{}, fmt.Errorf("--scenarios: %s has no Service datapath to %s (use %s)", n, rp.Verb, datapath.Choices())
	}
	return namedLab{name: n.String(), named: n, cfg: cfg, parts: sc.Parts}, nil
}

// header prints the run's first line: what it measures and for how long.
func (k *labKind) header(req *runRequest, labs []namedLab) {
	names, plan := scenarioNames(labs), req.plan
	if req.onePlacement() {
		fmt.Fprintf(req.progress, "cnibench run %s: %s on %s, %s, %d rounds: about %s of measurement plus programming\n",
			req.runID, req.about, strings.Join(names, ", "), strings.Join(plan.Tests, ", "), plan.Rounds, req.estimate(names))
		return
	}
	if req.about != "" { // a profile's rows at scale after its rounds
		fmt.Fprintf(req.progress, "cnibench run %s: profile %s, %d scenario(s), %d samples in rounds, %s: about %s of measurement plus programming\n",
			req.runID, plan.Profile, len(names), plan.SamplesOn(names), req.about, req.estimate(names))
		return
	}
	fmt.Fprintf(req.progress, "cnibench run %s: profile %s, %d scenario(s), %d samples, about %s of measurement\n",
		req.runID, plan.Profile, len(names), plan.SamplesOn(names), req.estimate(names))
}

// hasServicePlacement tells whether placements has a pod-to-service one.
func hasServicePlacement(placements []string) bool {
	for _, p := range placements {
		if suite.IsServicePlacement(p) {
			return true
		}
	}
	return false
}

// anyServiceDatapath tells whether a lab has a Service datapath, asked for
// or in a running lab's state.
func anyServiceDatapath(labs []namedLab) bool {
	for _, l := range labs {
		dp := l.cfg.ServiceDatapath
		if running, err := lab.Load(l.cfg.StateDir, l.cfg.Name); err == nil {
			dp = running.Config.ServiceDatapath
		}
		if dp != "" {
			return true
		}
	}
	return false
}

// scalePlacement picks a lab's sweep placement among the candidates: the
// first, unless it is other-node and the lab (running, or as the flags
// create it) has one node.
func scalePlacement(candidates []string, l namedLab) string {
	nodes := l.cfg.Nodes
	if running, err := lab.Load(l.cfg.StateDir, l.cfg.Name); err == nil {
		nodes = len(running.Nodes)
	}
	if candidates[0] == suite.PodToServiceOtherNode && nodes < 2 && len(candidates) > 1 {
		return candidates[1]
	}
	return candidates[0]
}

// parseScenarios parses --scenarios (or a profile's) once into their
// parts; a bad name is a one-line error naming it.
func parseScenarios(list []string) ([]results.ScenarioName, error) {
	var out []results.ScenarioName
	for _, s := range list {
		n, err := results.ParseScenarioName(s)
		if err != nil {
			return nil, fmt.Errorf("--scenarios: %w", err)
		}
		out = append(out, n)
	}
	return out, nil
}

// scenarioStrings are scenario names as strings.
func scenarioStrings(names []results.ScenarioName) []string {
	out := make([]string, 0, len(names))
	for _, n := range names {
		out = append(out, n.String())
	}
	return out
}

func scenarioNames(labs []namedLab) []string {
	var n []string
	for _, l := range labs {
		n = append(n, l.name)
	}
	return n
}

// pairPods gives a lab the run creates the pods its --pairs need
// (labtarget.PodsNeeded): more than --pods-per-node's default, or an error
// when --pods-per-node asks for fewer.
func pairPods(req *runRequest, cfg lab.Config) (lab.Config, error) {
	need := labtarget.PodsNeeded(req.plan.PairCount())
	if req.plan.PairCount() < 2 || cfg.PodsPerNode >= need {
		return cfg, nil
	}
	if req.flags.Changed("pods-per-node") {
		return cfg, fmt.Errorf("--pairs %d needs --pods-per-node %d or more, got %d", req.plan.PairCount(), need, cfg.PodsPerNode)
	}
	cfg.PodsPerNode = need
	return cfg, cfg.Validate()
}
