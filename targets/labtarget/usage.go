package labtarget

import (
	"context"
	"fmt"
	"time"

	"github.com/cnibench/cnibench/flows"
	"github.com/cnibench/cnibench/l7proxy"
	"github.com/cnibench/cnibench/results"
	"github.com/cnibench/cnibench/suite"
)

// usageMark is what a sample's start read.
type usageMark struct {
	at    time.Time
	cpu   l7proxy.Usage
	flows flows.Counts
	wg    map[string]float64 // encryption daemons' CPU by node
}

// StartUsage implements suite.UsageSampler: with L7 proxies or flows on,
// their CPU and event counts are the lab's datapath usage; without,
// nothing is read.
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
	usage := results.NewDatapathUsage(results.UsageSourceLab, time.Since(m.at).Seconds(), comps)
	if t.flows != nil && len(t.flows.recs) > 0 {
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
		c, err := t.flowCounts()
		if err != nil {
			return nil, err
		}
		usage.Flows = true
		usage.FlowEvents, usage.FlowEventsLost = c.Events-m.flows.Events, c.Lost-m.flows.Lost
	}
	return usage, nil
}
