package cli

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/cnibench/cnibench/datapath/churn"
	"github.com/cnibench/cnibench/results"
	"github.com/cnibench/cnibench/stats"
	"github.com/cnibench/cnibench/suite"
)

// defaultChurnScenarios are churned when --scenarios is not given: each
// datapath with and without churn, side by side.
const defaultChurnScenarios = "iptables,nftables,ebpf"

// churnFlags are the churn schedule's flags (run --tests churn).
type churnFlags struct {
	services  int
	endpoints int
	rate      float64
	minSync   time.Duration
}

func (f *churnFlags) register(fs *pflag.FlagSet) {
	fs.IntVar(&f.services, "churn-services", churn.DefaultServices, "churn: dummy Services kept programmed beside the test Service")
	fs.IntVar(&f.endpoints, "churn-endpoints", churn.DefaultEndpoints, "churn: endpoints of each dummy Service (a scale-up adds half as many again)")
	fs.Float64Var(&f.rate, "churn-rate", churn.DefaultRate, "churn: changes per second requested (scale up/down, endpoint replaced, Service added/removed, in turn)")
	fs.DurationVar(&f.minSync, "min-sync-interval", -1, // -1ns: not given
		"churn: the sync loop's minimum interval (default: 1s for iptables and nftables as kube-proxy's, 0 for eBPF: a sync per change; on a cluster 0: each change is written as it comes and the cluster's proxy keeps its own)")
	appliesTo(fs, annSchedule, []string{scheduleChurn}, "churn-services", "churn-endpoints", "churn-rate", "min-sync-interval")
}

// asked tells whether --tests asks for the churn schedule.
func (f *churnFlags) asked(tests []string) bool {
	for _, t := range tests {
		if strings.EqualFold(t, suite.ChurnTest) {
			return true
		}
	}
	return false
}

// plan parses the churn flags and resolves the tests measured with and
// without churn on one pod-to-service placement.
func (f *churnFlags) plan(o suite.Options) (churn.Options, *suite.Plan, error) {
	if len(o.Tests) > 1 {
		return churn.Options{}, nil, fmt.Errorf("--tests: %s is a test of its own kind (it measures %s with and without churn) and cannot mix with %s: run them separately",
			suite.ChurnTest, strings.Join(suite.ChurnTests, ", "), strings.Join(without(o.Tests, suite.ChurnTest), ","))
	}
	if len(o.Placements) > 1 {
		return churn.Options{}, nil, fmt.Errorf("--placements: %s measures one placement (default: %s, or %s on a one-node target)", suite.ChurnTest, suite.PodToServiceOtherNode, suite.PodToServiceSameNode)
	}
	for _, p := range o.Placements {
		if !suite.IsServicePlacement(p) {
			return churn.Options{}, nil, fmt.Errorf("--placements: %s measures %s or %s, not %s", suite.ChurnTest, suite.PodToServiceOtherNode, suite.PodToServiceSameNode, p)
		}
	}
	opt := churn.Options{Services: f.services, Endpoints: f.endpoints, Rate: f.rate}
	if f.minSync >= 0 {
		ms := f.minSync
		opt.MinSync = &ms
	}
	switch {
	case !(f.rate > 0):
		return opt, nil, fmt.Errorf("--churn-rate must be positive, got %g", f.rate)
	case f.services == 0:
		return opt, nil, fmt.Errorf("--churn-services must be in 2..100000, got 0")
	case f.endpoints == 0:
		return opt, nil, fmt.Errorf("--churn-endpoints must be in 2..100, got 0")
	case f.minSync < 0 && f.minSync != -1:
		return opt, nil, fmt.Errorf("--min-sync-interval must be in 0..1m, got %s", f.minSync)
	}
	if err := opt.Validate(); err != nil {
		return opt, nil, err
	}
	o.Tests = suite.ChurnTests
	if len(o.Placements) == 0 {
		o.Placements = []string{suite.PodToServiceOtherNode, suite.PodToServiceSameNode}
	}
	if o.Rounds == 0 {
		o.Rounds = stats.DefaultMinRounds // verdicts against no churn need 5 rounds
	}
	plan, err := o.Resolve()
	return opt, plan, err
}

// withChurned pairs every scenario with its churned twin ("iptables" with
// "iptables+churn"), each twin right after it, unless the list has it.
func withChurned(names []results.ScenarioName) []results.ScenarioName {
	var out []results.ScenarioName
	has := map[string]bool{}
	for _, n := range names {
		has[n.String()] = true
	}
	for _, n := range names {
		out = append(out, n)
		if twin := n.With(suite.ChurnPart); !n.Has(suite.ChurnPart) && !has[twin.String()] {
			out = append(out, twin)
		}
	}
	return out
}
