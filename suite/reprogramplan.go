package suite

import (
	"fmt"
	"strings"
	"time"

	"github.com/cnibench/cnibench/stats"
)

// ReprogramPlan resolves the plan of a schedule that reprograms the
// Service datapath (the sweep, the churn), named test on --tests: its own
// tests, and the candidate placements in order of preference — the one
// given with --placements, else other-node, then same-node (each target
// measures the first it can host) — in 5 rounds unless given, the fewest
// a verdict needs. why says, in the refusal of a mix with other tests,
// what makes it a test of its own kind.
func ReprogramPlan(o Options, test, why string, tests []string) (*Plan, error) {
	if len(o.Tests) > 1 {
		return nil, fmt.Errorf("--tests: %s is a test of its own kind (%s) and cannot mix with %s: run them separately",
			test, why, strings.Join(without(o.Tests, test), ","))
	}
	if len(o.Placements) > 1 {
		return nil, fmt.Errorf("--placements: %s measures one placement (default: %s, or %s on a one-node target)", test, PodToServiceOtherNode, PodToServiceSameNode)
	}
	for _, p := range o.Placements {
		if !IsServicePlacement(p) {
			return nil, fmt.Errorf("--placements: %s measures %s or %s, not %s", test, PodToServiceOtherNode, PodToServiceSameNode, p)
		}
	}
	o.Tests = tests
	if len(o.Placements) == 0 {
		o.Placements = []string{PodToServiceOtherNode, PodToServiceSameNode}
	}
	if o.Rounds == 0 {
		o.Rounds = stats.DefaultMinRounds
	}
	return o.Resolve()
}

// without is list without drop (any case).
func without(list []string, drop string) []string {
	var out []string
	for _, s := range list {
		if !strings.EqualFold(s, drop) {
			out = append(out, s)
		}
	}
	return out
}

// reprogramEstimate is the measuring time of a reprogramming schedule:
// rounds of its tests on its one placement, per scenario, times passes
// (the sweep's steps; 1 for the churn).
func reprogramEstimate(p *Plan, scenarios, passes int) time.Duration {
	return time.Duration(p.Rounds*len(p.Specs)*scenarios*passes) * time.Duration(p.Duration+p.Warmup)
}
