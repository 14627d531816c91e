package cli

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/cnibench/cnibench/datapath/sweep"
	"github.com/cnibench/cnibench/stats"
	"github.com/cnibench/cnibench/suite"
)

// defaultScaleScenarios are swept when --scenarios is not given.
const defaultScaleScenarios = "iptables,nftables,ebpf"

// scaleFlags are the Service-scale sweep's flags that every target has
// (cnibench sweep, run --tests service-scale); each target registers its
// own beside them (targets_lab.go, targets_k8s.go).
type scaleFlags struct {
	steps       string
	endpoints   int
	position    string
	seed        uint64
	maxStepTime time.Duration
}

func (f *scaleFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.steps, "scale-steps", "0,1000,5000,10000,20000,30000", "cumulative dummy Service counts, increasing")
	fs.IntVar(&f.endpoints, "endpoints-per-service", sweep.DefaultEndpoints, "endpoints of each dummy Service")
	fs.StringVar(&f.position, "service-position", "random", "the test Service among the dummies: random, first or last")
	fs.Uint64Var(&f.seed, "scale-seed", 0, "seed of the random test Service position (0: draw one; the header and results record it)")
	fs.DurationVar(&f.maxStepTime, "max-step-time", sweep.DefaultMaxStepTime, "stop a datapath's sweep when its next step's programming is predicted to take longer")
	appliesTo(fs, annSchedule, []string{scheduleSweep}, "scale-steps", "endpoints-per-service", "service-position", "scale-seed", "max-step-time")
}

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
	return o, o.Validate()
}

// plan parses the sweep flags and resolves the tests every step measures
// (suite.ScaleTests) and the candidate placements, in order of preference:
// the one given with --placements, else other-node, then same-node (the
// target sweeps on the first it can host).
func (f *scaleFlags) plan(o suite.Options) (sweep.Options, *suite.Plan, error) {
	if len(o.Tests) > 1 {
		return sweep.Options{}, nil, fmt.Errorf("--tests: %s is a test of its own kind (it reprograms the datapath between steps) and cannot mix with %s: run them separately",
			suite.ServiceScaleTest, strings.Join(without(o.Tests, suite.ServiceScaleTest), ","))
	}
	if len(o.Placements) > 1 {
		return sweep.Options{}, nil, fmt.Errorf("--placements: %s measures one placement (default: %s, or %s on a one-node target)", suite.ServiceScaleTest, suite.PodToServiceOtherNode, suite.PodToServiceSameNode)
	}
	for _, p := range o.Placements {
		if !suite.IsServicePlacement(p) {
			return sweep.Options{}, nil, fmt.Errorf("--placements: %s measures %s or %s, not %s", suite.ServiceScaleTest, suite.PodToServiceOtherNode, suite.PodToServiceSameNode, p)
		}
	}
	opt, err := f.options()
	if err != nil {
		return opt, nil, err
	}
	o.Tests = suite.ScaleTests
	if len(o.Placements) == 0 {
		o.Placements = []string{suite.PodToServiceOtherNode, suite.PodToServiceSameNode}
	}
	if o.Rounds == 0 {
		o.Rounds = stats.DefaultMinRounds // verdicts against step 0 need 5 rounds
	}
	plan, err := o.Resolve()
	return opt, plan, err
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
