package cli

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/cnibench/cnibench/datapath/churn"
	"github.com/cnibench/cnibench/suite"
)

// scheduleChurn is churn against no churn (cnibench churn, run --tests
// churn).
const scheduleChurn = "churn"

// defaultChurnScenarios are churned when --scenarios is not given: each
// datapath with and without churn, side by side.
const defaultChurnScenarios = "iptables,nftables,ebpf"

func init() {
	registerSchedule(scheduleEntry{name: scheduleChurn, rank: 2, title: "the churn schedule", hint: "cnibench churn, or run --tests churn",
		test: suite.ChurnTest, reprograms: true, scenarios: defaultChurnScenarios,
		use:   "churn",
		short: "Churn: does the datapath keep up while the Services around the traffic change?",
		long: `Keep --churn-services dummy Services of --churn-endpoints endpoints programmed
beside the test Service and measure ` + strings.Join(suite.ChurnTests, ", ") + ` through it on
pod-to-service/other-node (same-node on a one-node target), each scenario X beside
its churned twin X+churn, rounds interleaved; during every sample of a churned
twin the Services change at --churn-rate changes a second (scaled, an endpoint
replaced, added, removed, in turn) through a sync loop like the Service proxy's,
each change timed until the kernel holds it. On the lab each --scenarios entry is
a lab with its own Service datapath (default ` + defaultChurnScenarios + `); on a cluster
(--target k8s) the changes go through the API server and the nodes' probes time
them. Every sample is saved as it finishes. Also 'cnibench run --tests churn'.
See docs/churn.md.`,
		flagHelp: reprogramFlagHelp("rounds (default 5, the fewest a verdict needs)"),
		new:      func() scheduleKind { return &churnFlags{} },
	})
}

// churnFlags are the churn schedule's flags that every target has; each
// target registers its own beside them, annotated scheduleReprograms.
type churnFlags struct {
	services  int
	endpoints int
	rate      float64
	minSync   *time.Duration // nil: the datapath's default
	opt       churn.Options  // resolved
}

func (f *churnFlags) register(fs *pflag.FlagSet) {
	fs.IntVar(&f.services, "churn-services", churn.DefaultServices, "churn: dummy Services kept programmed beside the test Service")
	fs.IntVar(&f.endpoints, "churn-endpoints", churn.DefaultEndpoints, "churn: endpoints of each dummy Service (a scale-up adds half as many again)")
	fs.Float64Var(&f.rate, "churn-rate", churn.DefaultRate, "churn: changes per second requested (scale up/down, endpoint replaced, Service added/removed, in turn)")
	fs.Var(optionalDuration{&f.minSync}, "min-sync-interval",
		"churn: the sync loop's minimum interval (default: 1s for iptables and nftables as kube-proxy's, 0 for eBPF: a sync per change; on a cluster 0: each change is written as it comes and the cluster's proxy keeps its own)")
}

// resolve parses the churn flags after its plan (suite.ChurnPlan).
func (f *churnFlags) resolve(_ *pflag.FlagSet, o suite.Options) (suite.Schedule, *suite.Plan, error) {
	plan, err := suite.ChurnPlan(o)
	if err != nil {
		return nil, nil, err
	}
	f.opt = churn.Options{Services: f.services, Endpoints: f.endpoints, Rate: f.rate, MinSync: f.minSync}
	switch {
	case !(f.rate > 0):
		return nil, nil, fmt.Errorf("--churn-rate must be positive, got %g", f.rate)
	case f.services == 0:
		return nil, nil, fmt.Errorf("--churn-services must be in 2..100000, got 0")
	case f.endpoints == 0:
		return nil, nil, fmt.Errorf("--churn-endpoints must be in 2..100, got 0")
	case f.minSync != nil && *f.minSync < 0:
		return nil, nil, fmt.Errorf("--min-sync-interval must be in 0..1m, got %s", *f.minSync)
	}
	if err := f.opt.Validate(); err != nil {
		return nil, nil, err
	}
	return &suite.Churn{Options: f.opt}, plan, nil
}

// about says what the churn changes and how fast.
func (f *churnFlags) about() string {
	return fmt.Sprintf("churn of %d Services × %d endpoints at %g changes/s", f.opt.Services, f.opt.Endpoints, f.opt.Rate)
}

// optionalDuration is a duration flag that tells "not given" (nil, no
// default in --help) from 0.
type optionalDuration struct{ p **time.Duration }

func (o optionalDuration) String() string {
	if o.p == nil || *o.p == nil {
		return ""
	}
	return (**o.p).String()
}

func (o optionalDuration) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*o.p = &d
	return nil
}

func (optionalDuration) Type() string { return "duration" }
