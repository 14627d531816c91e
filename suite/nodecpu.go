package suite

import (
	"context"
	"fmt"
	"time"

	"github.com/cnibench/cnibench/results"
	"github.com/cnibench/cnibench/suite/nodecpu"
)

// NodeAccounter is a target whose nodes run on this machine (the lab):
// the runner records what each node's CPUs and cgroups spent during every
// sample (Sample.Nodes), and once per scenario the same nodes idle
// (Scenario.IdleNodes), so queries per core can count the kernel's cores
// and loaded CPU be read against idle CPU.
type NodeAccounter interface {
	// AccountNodes lists the nodes with their CPUs and cgroups as they
	// are now (proxies come and go with the scenario's parts).
	AccountNodes() ([]nodecpu.Node, error)
}

// idleWindow is how long the idle reading lasts: long enough for 10 ms
// ticks to average out (150 ticks a CPU), short beside a run's samples.
const idleWindow = 1500 * time.Millisecond

// nodesMark is a first reading of the nodes (a sample's, or the idle
// window's); nil when the target does not account its nodes or the
// reading failed (nothing is recorded).
type nodesMark struct {
	nodes []nodecpu.Node
	mark  nodecpu.Mark
}

// markNodes reads a's nodes now; nil without nodes.
func markNodes(a NodeAccounter) (*nodesMark, error) {
	nodes, err := a.AccountNodes()
	if err != nil || len(nodes) == 0 {
		return nil, err
	}
	m, err := nodecpu.Read(nodes)
	if err != nil {
		return nil, err
	}
	return &nodesMark{nodes: nodes, mark: m}, nil
}

// startNodes reads the nodes at the start of a sample's traffic; a
// failure records nothing.
func startNodes(tgt Target) *nodesMark {
	a, ok := tgt.(NodeAccounter)
	if !ok {
		return nil
	}
	m, _ := markNodes(a)
	return m
}

// since reads the nodes again: what they spent since the mark (nil for a
// nil mark).
func (m *nodesMark) since() (*results.NodesCPU, error) {
	if m == nil {
		return nil, nil
	}
	after, err := nodecpu.Read(m.nodes)
	if err != nil {
		return nil, err
	}
	return nodecpu.Since(m.nodes, m.mark, after), nil
}

// end is since for a sample: a failure records nothing.
func (m *nodesMark) end() *results.NodesCPU {
	n, _ := m.since()
	return n
}

// idleNodes reads sc's nodes and its datapath's components idle, once
// per scenario, before its first sample: nothing of the run's traffic
// runs then, the agents wait. A failure is a note, and the scenario goes
// without that reading.
func (r *Runner) idleNodes(ctx context.Context, sc Scenario) {
	a, accounts := sc.Target.(NodeAccounter)
	us, samples := sc.Target.(UsageSampler)
	if (!accounts && !samples) || r.idled[sc.Name] {
		return
	}
	if r.idled == nil {
		r.idled = map[string]bool{}
	}
	r.idled[sc.Name] = true
	var w idleWindowReading
	if accounts {
		w.startNodes(a)
	}
	if samples && !r.usage.off[sc.Name] {
		w.startUsage(ctx, us)
	}
	select {
	case <-ctx.Done():
		return
	case <-time.After(idleWindow):
	}
	idle, usage := w.end(ctx, us)
	for _, err := range w.errs {
		if ctx.Err() == nil {
			r.run.Notes = append(r.run.Notes, fmt.Sprintf("scenario %s: %v", sc.Name, err))
		}
	}
	if w.usageErr != nil && ctx.Err() == nil {
		r.usageFailed(sc.Name, "the idle reading before its first sample", w.usageErr)
	}
	for i := range r.run.Scenarios {
		if r.run.Scenarios[i].Name == sc.Name {
			r.run.Scenarios[i].IdleNodes, r.run.Scenarios[i].IdleUsage = idle, usage
		}
	}
}

// idleWindowReading is the idle window's first readings.
type idleWindowReading struct {
	nodes *nodesMark
	usage UsageMark
	errs  []error
	// usageErr is the datapath usage's failure: like a sample's, it turns
	// the scenario's usage reading off with one note (Runner.usageFailed).
	usageErr error
}

func (w *idleWindowReading) startNodes(a NodeAccounter) {
	var err error
	if w.nodes, err = markNodes(a); err != nil {
		w.errs = append(w.errs, fmt.Errorf("the nodes' idle CPU not read: %w", err))
	}
}

func (w *idleWindowReading) startUsage(ctx context.Context, us UsageSampler) {
	w.usage, w.usageErr = us.StartUsage(ctx)
}

// end reads again: the nodes' idle CPU and the datapath's idle usage,
// each nil where its first reading failed or is off.
func (w *idleWindowReading) end(ctx context.Context, us UsageSampler) (*results.NodesCPU, *results.DatapathUsage) {
	idle, err := w.nodes.since()
	if err != nil {
		w.errs = append(w.errs, fmt.Errorf("the nodes' idle CPU not read: %w", err))
	}
	var usage *results.DatapathUsage
	if w.usage != nil && w.usageErr == nil {
		usage, w.usageErr = us.EndUsage(ctx, w.usage)
	}
	return idle, usage
}
