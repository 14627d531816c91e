package suite

import (
	"context"
	"strings"
	"time"

	"github.com/cnibench/cnibench/engine/kinds"
	"github.com/cnibench/cnibench/internal/procstat"
	"github.com/cnibench/cnibench/results"
)

// samplePairs is sample for a Result with several pairs (run --pairs N):
// every pair's client runs at once from one start time, each pair's
// numbers are kept in Sample.Pairs, and the sample's Result is their
// aggregate (kinds.Kind.Merge), so display, verdicts and the gate read it
// as one sample. A pair that fails fails the sample, naming the pair.
func (r *Runner) samplePairs(ctx, sctx context.Context, tgt Target, keeper AgentKeeper, watched results.Placement, round int, res *results.Result, s results.Sample) results.Sample {
	opts, err := r.pairOptions(res)
	if err != nil {
		s.Error, s.End = err.Error(), time.Now().UTC()
		return s
	}
	cpu := readPairCPU(tgt, res.Pairs)
	p0, perr0 := procstat.Read()
	nodes := startNodes(tgt) // every node's CPU (nodecpu.go): queries per core of the whole load
	us, mark := r.startUsage(ctx, tgt, res, round)
	s.Pairs = runPairs(sctx, tgt, res.Kind(), res.Pairs, opts, sampleBound(res)+startLead)
	usage := r.endUsage(ctx, us, mark, res, round)
	s.ClientCPUSec, s.ServerCPUSec = cpu.since(tgt, s.Pairs)
	s.Pinned = pinnedSince(tgt, p0, perr0)
	s.Nodes = nodes.end()
	s.End = time.Now().UTC()
	failed := pairsFailed(s.Pairs)
	if keeper != nil && ctx.Err() == nil {
		if died := checkAgents(ctx, keeper, watched, failed != ""); died != nil {
			failed = died.Error() // the cause, whatever the pairs' calls returned
		}
	}
	if failed == "" {
		s.Result, err = mergePairs(res.Kind(), s.Pairs)
		if err == nil {
			err = checkResult(s.Result)
		}
		if err != nil {
			failed = err.Error()
		}
	}
	if failed != "" {
		return results.Sample{Round: round, Start: s.Start, End: s.End, Error: failed, Pairs: s.Pairs}
	}
	s.DatapathUsage = usage
	return s
}

// checkResult fails a result that measured nothing (its kind's Check):
// a sample's, a pair's, or the pairs' aggregate.
func checkResult(out any) error {
	if k, ok := kinds.Of(out); ok && k.Check != nil {
		return k.Check(out)
	}
	return nil
}

// pairCPU is the CPU seconds of every endpoint of a sample's pairs at its
// start; an endpoint the target could not read is left out.
type pairCPU map[string]float64

// readPairCPU reads every endpoint of the pairs once.
func readPairCPU(tgt Target, pairs []results.Placement) pairCPU {
	c := pairCPU{}
	for _, p := range pairs {
		for _, ep := range sampleEndpoints(p) {
			if _, seen := c[ep]; seen {
				continue
			}
			if v, err := tgt.CPUSeconds(ep); err == nil {
				c[ep] = v
			}
		}
	}
	return c
}

// since fills each pair's client and server CPU since c was read and
// returns the sample's: every client endpoint's and every server
// endpoint's once (pairs of pod-to-service share the Service's backends).
func (c pairCPU) since(tgt Target, ps []results.PairSample) (client, server float64) {
	used := map[string]float64{}
	for ep, v0 := range c {
		if v1, err := tgt.CPUSeconds(ep); err == nil {
			used[ep] = v1 - v0
		}
	}
	counted := map[string]bool{}
	add := func(eps []string, total *float64) (sum float64) {
		for _, ep := range eps {
			sum += used[ep]
			if !counted[ep] {
				counted[ep] = true
				*total += used[ep]
			}
		}
		return sum
	}
	for i := range ps {
		ps[i].ClientCPUSec = add([]string{ps[i].Client}, &client)
		ps[i].ServerCPUSec = add(strings.Split(ps[i].Server, "+"), &server)
	}
	return client, server
}
