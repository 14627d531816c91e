package labtarget

import (
	"context"
	"fmt"
	"time"

	"github.com/cnibench/cnibench/lab"
	"github.com/cnibench/cnibench/lab/flows"
	"github.com/cnibench/cnibench/lab/l7proxy"
	"github.com/cnibench/cnibench/results"
	"github.com/cnibench/cnibench/suite"
)

// usageMark is what a sample's start read.
type usageMark struct {
	at       time.Time
	cpu      l7proxy.Usage
	flows    flows.Counts
	flowsCPU []time.Duration    // each node's consumer, as t.flows.recs
	wg       map[string]float64 // encryption daemons' CPU by node
}

// StartUsage implements suite.UsageSampler: with L7 proxies, flows or
// encryption on, their CPU (the proxies', the flow consumers', the
// WireGuard daemons') and event counts are the lab's datapath usage;
// without, nothing is read.
func (t *Target) StartUsage(ctx context.Context) (suite.UsageMark, error) {
	l7on, flowsOn := t.l7 != nil && t.l7.d != nil, t.flows != nil && len(t.flows.recs) > 0
	if !l7on && !flowsOn && t.encryption == nil {
		return nil, nil
	}
	m := usageMark{at: time.Now()}
	var err error
	if m.wg, err = t.encryptionCPU(); err != nil {
		return nil, err
	}
	if l7on {
		if m.cpu, err = t.l7.d.CPU(); err != nil {
			return nil, err
		}
	}
	if flowsOn {
		if m.flows, err = t.flowCounts(); err != nil {
			return nil, err
		}
		if m.flowsCPU, err = t.flowsCPU(); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// EndUsage implements suite.UsageSampler: each proxy's CPU and the flow
// events since mark.
func (t *Target) EndUsage(ctx context.Context, mark suite.UsageMark) (*results.DatapathUsage, error) {
	m, ok := mark.(usageMark)
	if !ok {
		return nil, nil
	}
	var comps []results.ComponentUsage
	if t.l7 != nil && t.l7.d != nil {
		u, err := t.l7.d.CPU()
		if err != nil {
			return nil, err
		}
		for _, name := range t.l7.d.Names() {
			comps = append(comps, results.ComponentUsage{Plugin: "haproxy-" + t.l7.check.Model, Pod: name,
				CPUSec: (u.ByProxy[name] - m.cpu.ByProxy[name]).Seconds()})
		}
	}
	if m.wg != nil {
		wg, err := t.encryptionCPU()
		if err != nil {
			return nil, err
		}
		comps = append(comps, encryptionComponents(m.wg, wg)...)
	}
	flowsOn := t.flows != nil && len(t.flows.recs) > 0
	var c flows.Counts
	if flowsOn {
		// Events reach the consumer up to 20 ms late (flows.Counts).
		select {
		case <-time.After(50 * time.Millisecond):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		for _, r := range t.flows.recs {
			if err := r.Err(); err != nil {
				return nil, fmt.Errorf("flows: the consumer stopped: %w", err)
			}
		}
		var err error
		if c, err = t.flowCounts(); err != nil {
			return nil, err
		}
		cpu, err := t.flowsCPU()
		if err != nil {
			return nil, err
		}
		comps = append(comps, consumerUsage(t.flows.check.Mechanism, t.lab.Nodes, m.flowsCPU, cpu)...)
	}
	usage := results.NewDatapathUsage(results.UsageSourceLab, time.Since(m.at).Seconds(), comps)
	if flowsOn {
		usage.Flows = true
		usage.FlowEvents, usage.FlowEventsLost = c.Events-m.flows.Events, c.Lost-m.flows.Lost
	}
	return usage, nil
}

// flowsCPU reads each node's flow consumer's CPU time, as t.flows.recs.
func (t *Target) flowsCPU() ([]time.Duration, error) {
	out := make([]time.Duration, len(t.flows.recs))
	for i, r := range t.flows.recs {
		c, err := r.ConsumerCPU()
		if err != nil {
			return nil, fmt.Errorf("flows: %w", err)
		}
		out[i] = c
	}
	return out, nil
}

// consumerUsage is one component per node's flow consumer (a thread of
// the cnibench process, no cgroup of the lab's): its CPU between the two
// readings, as the recorders are opened, one per node in order.
func consumerUsage(mech string, nodes []lab.Node, start, end []time.Duration) []results.ComponentUsage {
	var out []results.ComponentUsage
	for i := range end {
		if i >= len(start) || i >= len(nodes) {
			break
		}
		out = append(out, results.ComponentUsage{Plugin: "flows-" + mech, Node: nodes[i].Name,
			Pod: "consumer", CPUSec: (end[i] - start[i]).Seconds()})
	}
	return out
}
