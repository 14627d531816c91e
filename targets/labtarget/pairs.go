package labtarget

import (
	"fmt"

	"github.com/cnibench/cnibench/results"
	"github.com/cnibench/cnibench/suite"
)

// The lab's pairs (run --pairs N, docs/pairs.md) are suite.PairEndpoints,
// but for pod-to-service: the pairs share the one test Service and its
// backends (a Service per pair would add N ClusterIPs to every datapath's
// programming and proof for nothing the pairs measure). The agents are
// pinned per role: clients on CPU 0, servers on CPU 1.

// PodsNeeded is the pods per node that n pairs need.
func PodsNeeded(pairs int) int { return 2 * max(1, pairs) }

// pairEndpoints are pair k's (client, server group) of a placement, as
// placementEndpoints has pair 0's.
func pairEndpoints(name string, k int) ([2]string, error) {
	eps, ok := placementEndpoints[name]
	if !ok {
		return eps, fmt.Errorf("placement %s is not available on the lab target", name)
	}
	pair, err := suite.PairEndpoints(name, k, eps)
	if err == nil && suite.IsServicePlacement(name) {
		pair[1] = eps[1]
	}
	return pair, err
}

// pairs is the run's pair count (at least 1).
func (t *Target) pairs() int { return max(1, t.cfg.Pairs) }

// PairPlacement implements suite.PairPlacer.
func (t *Target) PairPlacement(name string, k int) (results.Placement, error) {
	if k >= t.pairs() {
		return results.Placement{}, fmt.Errorf("pair %d of a run of %d pairs", k, t.pairs())
	}
	return t.placement(name, k)
}

// checkPairPods refuses a lab with too few pods per node for the pairs
// (a running lab brought up with fewer).
func (t *Target) checkPairPods() error {
	if need := PodsNeeded(t.pairs()); t.pairs() > 1 && t.lab.Config.PodsPerNode < need {
		return fmt.Errorf("--pairs %d needs %d pods per node, lab %q has %d: take it down (cnibench --lab %s lab down) or bring it up with --pods-per-node %d",
			t.pairs(), need, t.lab.Config.Name, t.lab.Config.PodsPerNode, t.lab.Config.Name, need)
	}
	return nil
}

// checkPairParts refuses pairs with a scenario part whose client side is
// set up for one client pod (the l7-sidecar model's client sidecar, the
// l7-egress model's capture of the client's address): the other pairs'
// clients would bypass it, and their numbers would pass for the part's.
// The server-side parts (l7-node, waypoint, ambient, policy) cover every
// pair's servers (part.Env.PlacementServers, RunPods).
func checkPairParts(cfg Config) error {
	if cfg.Pairs < 2 {
		return nil
	}
	for _, p := range cfg.Parts {
		if n := p.Name(); n == "l7-sidecar" || n == "l7-egress" {
			return fmt.Errorf("--pairs %d: scenario part %s proxies pair 0's client alone (its client side is one pod's), not every pair's; run it without --pairs", cfg.Pairs, n)
		}
	}
	return nil
}
