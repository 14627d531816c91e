package cli

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/cnibench/cnibench/datapath/sweep"
	"github.com/cnibench/cnibench/suite"
)

// scheduleSweep is the Service-scale sweep (cnibench sweep, run --tests
// service-scale).
const scheduleSweep = "sweep"

// defaultScaleScenarios are swept when --scenarios is not given.
const defaultScaleScenarios = "iptables,nftables,ebpf"

func init() {
	registerSchedule(scheduleEntry{name: scheduleSweep, rank: 1, title: "the Service-scale sweep", hint: "cnibench sweep, or run --tests service-scale",
		test: suite.ServiceScaleTest, reprograms: true, scenarios: defaultScaleScenarios,
		use:   "sweep",
		short: "Service-scale sweep: how the datapath degrades as dummy Services are added",
		long: `Add dummy Services step by step (--scale-steps) and, at every step, program and
verify the Service datapath on every node, then measure ` + strings.Join(suite.ScaleTests, ", ") + `
through the test Service on pod-to-service/other-node (same-node on a one-node
target), in rounds, the datapaths interleaved. On the lab each --scenarios
entry is a lab with its own Service datapath (default ` + defaultScaleScenarios + `); on a
cluster (--target k8s) the dummies are real Services with EndpointSlices.
Every sample is saved as it finishes. Also 'cnibench run --tests service-scale'.
See docs/service-scale.md.`,
		flagHelp: reprogramFlagHelp("rounds at every step (default 5, the fewest a verdict needs)"),
		new:      func() scheduleKind { return &scaleFlags{} },
	})
}

// scaleFlags are the Service-scale sweep's flags that every target has;
// each target registers its own beside them (targets_lab.go,
// targets_k8s.go), annotated scheduleReprograms.
type scaleFlags struct {
	steps       string
	endpoints   int
	position    string
	seed        uint64
	maxStepTime time.Duration
	opt         sweep.Options // resolved
}

func (f *scaleFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.steps, "scale-steps", "0,1000,5000,10000,20000,30000", "cumulative dummy Service counts, increasing (run: the Service-scale rows of a profile that has them, tke, whose steps are the default there)")
	fs.IntVar(&f.endpoints, "endpoints-per-service", sweep.DefaultEndpoints, "endpoints of each dummy Service")
	fs.StringVar(&f.position, "service-position", "random", "the test Service among the dummies: random, first or last")
	fs.Uint64Var(&f.seed, "scale-seed", 0, "seed of the random test Service position (0: draw one; the header and results record it)")
	fs.DurationVar(&f.maxStepTime, "max-step-time", sweep.DefaultMaxStepTime, "stop a datapath's sweep when its next step's programming is predicted to take longer")
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
	err := o.Validate() // draws the seed of a random position
	return o, err
}

// resolve parses the sweep flags after its plan (suite.ScalePlan).
func (f *scaleFlags) resolve(_ *pflag.FlagSet, o suite.Options) (suite.Schedule, *suite.Plan, error) {
	plan, err := suite.ScalePlan(o)
	if err != nil {
		return nil, nil, err
	}
	if f.opt, err = f.options(); err != nil {
		return nil, nil, err
	}
	return &suite.ServiceScale{Sweep: f.opt}, plan, nil
}

// about says what the sweep runs and where the test Service sits.
func (f *scaleFlags) about() string {
	position := f.opt.Position
	if position == "random" {
		position = fmt.Sprintf("random, --scale-seed %d", f.opt.Seed)
	}
	return fmt.Sprintf("service-scale sweep over %s Services (%d endpoints each, test Service %s)", f.steps, f.opt.Endpoints, position)
}
