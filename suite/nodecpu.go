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

// nodesMark is a sample's first reading of the nodes; nil when the target
// does not account its nodes or the reading failed (nothing is recorded).
type nodesMark struct {
	nodes []nodecpu.Node
	mark  nodecpu.Mark
}

// startNodes reads the nodes at the start of a sample's traffic.
func startNodes(tgt Target) *nodesMark {
	a, ok := tgt.(NodeAccounter)
	if !ok {
		return nil
	}
	nodes, err := a.AccountNodes()
	if err != nil || len(nodes) == 0 {
		return nil
	}
	m, err := nodecpu.Read(nodes)
	if err != nil {
		return nil
	}
	return &nodesMark{nodes: nodes, mark: m}
}

// end reads the nodes again: what they spent since startNodes.
func (m *nodesMark) end() *results.NodesCPU {
	if m == nil {
		return nil
	}
	after, err := nodecpu.Read(m.nodes)
	if err != nil {
		return nil
	}
	return nodecpu.Since(m.nodes, m.mark, after)
}

// idleNodes reads sc's nodes idle, once per scenario, before its first
// sample: nothing of the run's traffic runs then, the agents wait. A
// failure is a note, and the scenario goes without.
func (r *Runner) idleNodes(ctx context.Context, sc Scenario) {
	a, ok := sc.Target.(NodeAccounter)
	if !ok || r.idled[sc.Name] {
		return
	}
	if r.idled == nil {
		r.idled = map[string]bool{}
	}
	r.idled[sc.Name] = true
	nodes, err := a.AccountNodes()
	var idle *results.NodesCPU
	if err == nil {
		idle, err = nodecpu.Idle(ctx, nodes, idleWindow)
	}
	if err != nil {
		if ctx.Err() == nil {
			r.run.Notes = append(r.run.Notes, fmt.Sprintf("scenario %s: the nodes' idle CPU not read: %v", sc.Name, err))
		}
		return
	}
	for i := range r.run.Scenarios {
		if r.run.Scenarios[i].Name == sc.Name {
			r.run.Scenarios[i].IdleNodes = idle
		}
	}
}
