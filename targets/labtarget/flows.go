package labtarget

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cnibench/cnibench/datapath"
	"github.com/cnibench/cnibench/internal/netnsx"
	"github.com/cnibench/cnibench/lab/flows"
)

// flowProbes is how many connections the toggle check makes: each must
// show up as at least one event.
const flowProbes = 3

// FlowsCheck is the flow observability a scenario ran with and how it was
// proved on before measuring; results keep it in the target's details,
// and each sample's datapath usage carries its event count.
type FlowsCheck struct {
	Mechanism string `json:"mechanism"` // flows.EBPF or flows.NFLOG
	Installed int    `json:"installed"` // programs attached / log rules, read from the kernel, all nodes
	// Probes connections made by the check; Events and SYNs what the
	// recorders counted for them (≥ 1 SYN event per connection).
	Probes int    `json:"probes"`
	Events uint64 `json:"events"`
	SYNs   uint64 `json:"syn_events"`
}

// flowsState is the run's live recorders, one per node.
type flowsState struct {
	recs  []*flows.Recorder
	check FlowsCheck
}

// flowsMechanism is the event source of a Service datapath's family, as
// the CNI would run it: eBPF datapaths emit from their tc hooks (Hubble);
// netfilter ones (and no Service datapath) log through NFLOG.
func flowsMechanism(serviceDatapath string) string {
	if v, ok := datapath.Lookup(serviceDatapath); ok && !v.Netfilter {
		return flows.EBPF
	}
	return flows.NFLOG
}

// openFlows turns flow observability on (lab.Config.Flows) on every node
// and proves it: the recorders are installed in the kernel and a few
// probe connections come back as events. Nothing is measured before.
func (t *Target) openFlows(ctx context.Context) error {
	if !t.lab.Config.Flows {
		return nil
	}
	mech := flowsMechanism(t.lab.Config.ServiceDatapath)
	t.progress("turning flow observability on (%s) ...", mech)
	t.flows = &flowsState{check: FlowsCheck{Mechanism: mech}}
	for _, n := range t.lab.Nodes {
		rec, err := flows.Open(flows.Site{Netns: netnsx.Path(n.Netns), Node: n.Name, Prefix: t.lab.Prefix}, mech, nil, flows.Options{})
		if err == nil {
			t.flows.recs = append(t.flows.recs, rec)
			var k int
			k, err = rec.Installed()
			t.flows.check.Installed += k
		}
		if err != nil {
			t.progress(" %s\n", failedOr(ctx))
			return fmt.Errorf("flows %s on %s: %w", mech, n.Name, err)
		}
	}
	if err := t.checkFlows(ctx); err != nil {
		t.progress(" %s\n", failedOr(ctx))
		return err
	}
	c := t.flows.check
	t.progress(" %d probe connections gave %d events (%d SYN)\n", c.Probes, c.Events, c.SYNs)
	return nil
}

// checkFlows makes flowProbes connections from a client to a server pod
// and requires at least one SYN event each and no loss.
func (t *Target) checkFlows(ctx context.Context) error {
	clients, servers, err := t.runPods()
	if err != nil {
		return fmt.Errorf("flows: %w", err)
	}
	before, err := t.flowCounts()
	if err != nil {
		return err
	}
	var scratch PolicyCheck // the probes' records are not kept
	for i := 0; i < flowProbes; i++ {
		if err := t.probe("flows "+t.flows.check.Mechanism, clients[0], servers[0], "connect", &scratch); err != nil {
			return err
		}
	}
	c := &t.flows.check
	c.Probes = flowProbes
	// Events reach the consumer in batches, at most 20 ms late.
	deadline := time.Now().Add(2 * time.Second)
	for {
		after, err := t.flowCounts()
		if err != nil {
			return err
		}
		c.Events, c.SYNs = after.Events-before.Events, after.ByKind["tcp-syn"]-before.ByKind["tcp-syn"]
		if after.Lost > before.Lost {
			return fmt.Errorf("flows %s: %d events lost during the check", c.Mechanism, after.Lost-before.Lost)
		}
		if c.SYNs >= flowProbes {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("flows %s: %d probe connections gave %d SYN events (%d events in all): the recorders do not see the pods' flows", c.Mechanism, flowProbes, c.SYNs, c.Events)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// flowCounts sums the recorders' counts.
func (t *Target) flowCounts() (flows.Counts, error) {
	sum := flows.Counts{ByKind: map[string]uint64{}, At: time.Now()}
	for _, r := range t.flows.recs {
		c, err := r.Counts()
		if err != nil {
			return sum, fmt.Errorf("flows: %w", err)
		}
		sum.Events += c.Events
		sum.Lost += c.Lost
		for k, v := range c.ByKind {
			sum.ByKind[k] += v
		}
	}
	return sum, nil
}

// closeFlows removes the recorders and checks nothing of them is left.
func (t *Target) closeFlows() error {
	if t.flows == nil {
		return nil
	}
	var errs []error
	for i, r := range t.flows.recs {
		errs = append(errs, r.Close())
		n := t.lab.Nodes[i]
		left, err := flows.Leftovers(flows.Site{Netns: netnsx.Path(n.Netns), Node: n.Name, Prefix: t.lab.Prefix}, flows.Options{})
		if err == nil && len(left) > 0 {
			err = fmt.Errorf("flows on %s: left after Close: %v", n.Name, left)
		}
		errs = append(errs, err)
	}
	t.flows.recs = nil
	return errors.Join(errs...)
}

// flowsDetails is the flows part of Details: nil without flows.
func (t *Target) flowsDetails() *FlowsCheck {
	if t.flows == nil {
		return nil
	}
	return &t.flows.check
}
