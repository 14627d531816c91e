package suite

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cnibench/cnibench/engine/kinds"
	"github.com/cnibench/cnibench/internal/procstat"
	"github.com/cnibench/cnibench/results"
)

// MaxPairs is the most client→server pairs a sample may run at once
// (--pairs): the lab's pod-to-pod same-node pairs take two pods of node0
// each, and a lab node holds at most 32 pods.
const MaxPairs = 16

// startLead is how far ahead of the calls the pairs' common start time is
// set: enough for every call to reach its agent (a cluster's API round
// trips included), short against a sample.
const startLead = 500 * time.Millisecond

// PairPlacer is a target that can run several client→server pairs of one
// placement at once (run --pairs N): pair k's endpoints, pair 0 being
// Placement's. An error wrapping ErrUnsupported skips the placement with
// why (host-to-host has one host per node).
type PairPlacer interface {
	PairPlacement(name string, pair int) (results.Placement, error)
}

// checkPairs refuses, before anything runs, a plan with several pairs and
// a test whose kind cannot aggregate them (no kinds.Kind.Merge).
func checkPairs(p *Plan) error {
	if p.PairCount() < 2 {
		return nil
	}
	for _, spec := range p.Specs {
		if k, ok := kinds.Lookup(spec.Kind); !ok || k.Merge == nil {
			return fmt.Errorf("--pairs %d: test %s (kind %s) cannot aggregate pairs (its kind has no merge); run it without --pairs", p.Pairs, spec.Name, spec.Kind)
		}
	}
	return nil
}

// pairPlacements are the placements of a Result's pairs on tgt; skipped
// is why the target cannot place them (the Result is then skipped).
func pairPlacements(tgt Target, name string, n int, first results.Placement) (pls []results.Placement, skipped string, err error) {
	pp, ok := tgt.(PairPlacer)
	if !ok {
		return nil, "", fmt.Errorf("--pairs %d: the %s target cannot run pairs", n, tgt.Kind())
	}
	pls = []results.Placement{first}
	for k := 1; k < n; k++ {
		pl, err := pp.PairPlacement(name, k)
		if errors.Is(err, ErrUnsupported) {
			return nil, err.Error(), nil
		}
		if err != nil {
			return nil, "", fmt.Errorf("%s pair %d: %w", name, k, err)
		}
		pls = append(pls, pl)
	}
	return pls, "", nil
}

// watchedPairs is one placement naming every endpoint of the pairs, for
// the agent checks before and after a sample (agents.go): pair 0's client
// is watched during it, the others' deaths are found after.
func watchedPairs(pairs []results.Placement) results.Placement {
	var others []string
	for i, p := range pairs {
		for _, ep := range sampleEndpoints(p) {
			if (i > 0 || ep != p.Client) && ep != pairs[0].Client && !slices.Contains(others, ep) {
				others = append(others, ep)
			}
		}
	}
	return results.Placement{Client: pairs[0].Client, Server: strings.Join(others, "+")}
}

// pairOptions are each pair's options (its server's address) with one
// start time, startLead from now, that every pair's agent waits for.
func (r *Runner) pairOptions(res *results.Result) ([]any, error) {
	spec, ok := r.Plan.spec(res.Test)
	if !ok {
		return nil, fmt.Errorf("test %s is not in the plan", res.Test)
	}
	start := time.Now().Add(startLead)
	out := make([]any, len(res.Pairs))
	for i, pl := range res.Pairs {
		o, ok := r.Plan.newResult(spec, pl, res.Scenario).Options.(kinds.Runs)
		if !ok {
			return nil, fmt.Errorf("test %s: its options have no start time", res.Test)
		}
		o.Runner().StartAt = start
		out[i] = o
	}
	return out, nil
}

// spec is the plan's test of that name.
func (p *Plan) spec(name string) (TestSpec, bool) {
	for _, s := range p.Specs {
		if s.Name == name {
			return s, true
		}
	}
	return TestSpec{}, false
}

// runPairs runs every pair's client at once, each with its own options,
// and returns what each measured.
func runPairs(ctx context.Context, tgt Target, kind string, pairs []results.Placement, opts []any, bound time.Duration) []results.PairSample {
	out := make([]results.PairSample, len(pairs))
	var wg sync.WaitGroup
	for i, pl := range pairs {
		out[i] = results.PairSample{Pair: i, Client: pl.Client, Server: pl.Server}
		wg.Go(func() { runPair(ctx, tgt, kind, opts[i], bound, &out[i]) })
	}
	wg.Wait()
	return out
}

// runPair runs one pair's client and records its measured interval (the
// call's when it failed) and result, checked as a sample's is.
func runPair(ctx context.Context, tgt Target, kind string, opts any, bound time.Duration, p *results.PairSample) {
	p.Start = time.Now().UTC()
	client, err := tgt.Agent(p.Client)
	var out any
	if err == nil {
		rctx, cancel := context.WithTimeout(ctx, bound)
		out, err = client.RunKind(rctx, kind, opts)
		cancel()
	}
	p.End = time.Now().UTC()
	if err == nil {
		err = checkResult(out)
	}
	if err != nil {
		p.Error = err.Error()
		return
	}
	p.Result = out
	if m, ok := out.(kinds.Measures); ok {
		p.Start, p.End = m.Interval().Start, m.Interval().End
	}
}

// pairsFailed is the first failed pair's error, naming the pair ("" when
// every pair measured): one failed pair fails the sample.
func pairsFailed(ps []results.PairSample) string {
	for _, p := range ps {
		if p.Error != "" {
			return fmt.Sprintf("pair %d (%s → %s): %s", p.Pair, p.Client, p.Server, p.Error)
		}
	}
	return ""
}

// mergePairs is the sample's aggregate of its pairs' results.
func mergePairs(kind string, ps []results.PairSample) (any, error) {
	k, ok := kinds.Lookup(kind)
	if !ok || k.Merge == nil {
		return nil, fmt.Errorf("kind %s cannot aggregate pairs", kind)
	}
	rs := make([]any, len(ps))
	for i, p := range ps {
		rs[i] = p.Result
	}
	agg, err := k.Merge(rs)
	if err != nil {
		return nil, fmt.Errorf("aggregate of %d pairs: %w", len(ps), err)
	}
	return agg, nil
}

// pinnedSince is the pinned CPUs' time since before (lab target only).
func pinnedSince(tgt Target, before procstat.Stat, berr error) *results.PinnedCPU {
	p, ok := tgt.(CPUPinner)
	after, aerr := procstat.Read()
	if !ok || berr != nil || aerr != nil || tgt.Kind() != "lab" {
		return nil
	}
	return pinnedCPU(p, before, after)
}
