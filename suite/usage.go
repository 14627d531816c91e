package suite

import (
	"context"
	"fmt"

	"github.com/cnibench/cnibench/results"
)

// UsageSampler is implemented by targets that can tell what their
// datapath components (kube-proxy, the CNI agent) used during a sample:
// the runner calls StartUsage before the client starts and EndUsage after
// it stops, and records the result in Sample.DatapathUsage.
type UsageSampler interface {
	// StartUsage reads what the sampler needs at the start of a sample.
	// A nil mark with a nil error means the target reads nothing (off).
	StartUsage(ctx context.Context) (UsageMark, error)
	// EndUsage reads again and returns the usage since mark.
	EndUsage(ctx context.Context, mark UsageMark) (*results.DatapathUsage, error)
}

// UsageMark is a sampler's reading at the start of a sample, opaque to the
// runner.
type UsageMark any

// TestChecker is implemented by targets that cannot run every test (the
// k8s agent image has no dnsmasq for the DNS tests): the runner records
// such a test as skipped with CheckTest's error as the reason.
type TestChecker interface {
	CheckTest(spec TestSpec) error
}

// usageState remembers, per scenario, that reading usage failed: the first
// failure becomes one run-level note and no more reads are tried, so a
// cluster without metrics-server does not fail or slow every sample.
type usageState struct {
	off   map[string]bool
	notes []string // not yet moved to the run
}

// startUsage begins a sample's usage reading; a nil sampler when the
// target has none, is off, or the read failed.
func (r *Runner) startUsage(ctx context.Context, tgt Target, res *results.Result, round int) (UsageSampler, UsageMark) {
	us, ok := tgt.(UsageSampler)
	if !ok || r.usage.off[res.Scenario] {
		return nil, nil
	}
	mark, err := us.StartUsage(ctx)
	if err != nil {
		r.usageFailed(res.Scenario, sampleName(res, round), err)
		return nil, nil
	}
	if mark == nil {
		return nil, nil
	}
	return us, mark
}

// endUsage finishes the reading begun by startUsage (us may be nil).
func (r *Runner) endUsage(ctx context.Context, us UsageSampler, mark UsageMark, res *results.Result, round int) *results.DatapathUsage {
	if us == nil || ctx.Err() != nil {
		return nil
	}
	u, err := us.EndUsage(ctx, mark)
	if err != nil {
		r.usageFailed(res.Scenario, sampleName(res, round), err)
		return nil
	}
	return u
}

// usageFailed turns a scenario's usage reading off, with one note saying
// from which reading on ("round 2 of TCP_RR pod-to-pod/same-node", "the
// idle reading before its first sample").
func (r *Runner) usageFailed(scenario, from string, err error) {
	if r.usage.off == nil {
		r.usage.off = map[string]bool{}
	}
	r.usage.off[scenario] = true
	who := ""
	if scenario != "" {
		who = "scenario " + scenario + ": "
	}
	r.usage.notes = append(r.usage.notes, fmt.Sprintf("%sdatapath CPU and memory not recorded from %s on (not read again this run): %v", who, from, err))
}

// sampleName is a sample's name in a note: "round 2 of TCP_RR pod-to-pod/same-node".
func sampleName(res *results.Result, round int) string {
	return fmt.Sprintf("round %d of %s %s", round, res.Test, res.Placement.Name())
}

// takeUsageNotes returns the notes gathered since the last call.
func (r *Runner) takeUsageNotes() []string {
	n := r.usage.notes
	r.usage.notes = nil
	return n
}

// checkTest is why tgt cannot run spec, or "".
func checkTest(tgt Target, spec TestSpec) string {
	if tc, ok := tgt.(TestChecker); ok {
		if err := tc.CheckTest(spec); err != nil {
			return err.Error()
		}
	}
	return ""
}
