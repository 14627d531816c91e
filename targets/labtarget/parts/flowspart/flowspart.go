// Package flowspart is flow observability as a scenario part ("flows"):
// per-flow events from a BPF ring buffer at the pods' tc hooks for the
// eBPF datapaths (as Hubble), from NFLOG for the netfilter ones, read by
// a consumer per node (lab/flows); proved on before measuring (a SYN
// event per probe connection, none lost), each sample's events and the
// consumers' CPU its datapath usage.
package flowspart

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cnibench/cnibench/datapath"
	"github.com/cnibench/cnibench/internal/netnsx"
	"github.com/cnibench/cnibench/lab"
	"github.com/cnibench/cnibench/lab/flows"
	"github.com/cnibench/cnibench/results"
	"github.com/cnibench/cnibench/targets/labtarget/part"
)

func init() { part.Register(part.Def{Help: []string{"flows"}, Parse: part.Exact(flowsPart{})}) }

// flowProbes is how many connections the toggle check makes: each must
// show up as at least one event.
const flowProbes = 3

type flowsPart struct{}

func (flowsPart) Name() string                  { return "flows" }
func (flowsPart) Token() string                 { return "flo" }
func (flowsPart) Phase() part.Phase             { return part.Flows }
func (flowsPart) Configure(*lab.Config)         {}
func (flowsPart) Conflicts(part.Scenario) error { return nil }

// Open turns flow observability on on every node and proves it: the
// recorders are installed in the kernel and a few probe connections come
// back as events. Nothing is measured before.
func (flowsPart) Open(ctx context.Context, env part.Env) (part.Opened, error) {
	l := env.Lab()
	mech := flowsMechanism(l.Config.ServiceDatapath)
	env.Progress("turning flow observability on (%s) ...", mech)
	o := &opened{lab: l, check: results.FlowsCheck{Mechanism: mech}}
	for _, n := range l.Nodes {
		rec, err := flows.Open(flows.Site{Netns: netnsx.Path(n.Netns), Node: n.Name, Prefix: l.Prefix}, mech, nil, flows.Options{})
		if err == nil {
			o.recs = append(o.recs, rec)
			var k int
			k, err = rec.Installed()
			o.check.Installed += k
		}
		if err != nil {
			env.Progress(" %s\n", part.FailedOr(ctx))
			return o, fmt.Errorf("flows %s on %s: %w", mech, n.Name, err)
		}
	}
	if err := o.checkFlows(ctx, env); err != nil {
		env.Progress(" %s\n", part.FailedOr(ctx))
		return o, err
	}
	c := o.check
	env.Progress(" %d probe connections gave %d events (%d SYN)\n", c.Probes, c.Events, c.SYNs)
	return o, nil
}

// opened is the run's live recorders, one per node.
type opened struct {
	lab   *lab.Lab
	recs  []*flows.Recorder
	check results.FlowsCheck
}

// Checks implements part.Opened.
func (o *opened) Checks() []results.Check {
	return []results.Check{{Part: "flows", Label: results.FlowsLabel, Text: o.check.Text()}}
}

// AddDetails implements part.Detailer.
func (o *opened) AddDetails(d map[string]any) { d["flows"] = o.check }

// flowsMark is what a sample's start read.
type flowsMark struct {
	counts flows.Counts
	cpu    []time.Duration // each node's consumer, as o.recs
}

// StartUsage implements part.Meter.
func (o *opened) StartUsage(context.Context) (any, error) {
	c, err := o.counts()
	if err != nil {
		return nil, err
	}
	cpu, err := o.consumerCPU()
	return flowsMark{c, cpu}, err
}

// EndUsage implements part.Meter: the events and the consumers' CPU
// since mark.
func (o *opened) EndUsage(ctx context.Context, mark any, u *results.DatapathUsage) error {
	m, _ := mark.(flowsMark)
	// Events reach the consumer up to 20 ms late (flows.Counts).
	select {
	case <-time.After(50 * time.Millisecond):
	case <-ctx.Done():
		return ctx.Err()
	}
	for _, r := range o.recs {
		if err := r.Err(); err != nil {
			return fmt.Errorf("flows: the consumer stopped: %w", err)
		}
	}
	c, err := o.counts()
	if err != nil {
		return err
	}
	cpu, err := o.consumerCPU()
	if err != nil {
		return err
	}
	u.Components = append(u.Components, consumerUsage(o.check.Mechanism, o.lab.Nodes, m.cpu, cpu)...)
	u.Flows = true
	u.FlowEvents, u.FlowEventsLost = c.Events-m.counts.Events, c.Lost-m.counts.Lost
	return nil
}

// consumerCPU reads each node's flow consumer's CPU time, as o.recs.
func (o *opened) consumerCPU() ([]time.Duration, error) {
	out := make([]time.Duration, len(o.recs))
	for i, r := range o.recs {
		c, err := r.ConsumerCPU()
		if err != nil {
			return nil, fmt.Errorf("flows: %w", err)
		}
		out[i] = c
	}
	return out, nil
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

// checkFlows makes flowProbes connections from a client to a server pod
// and requires at least one SYN event each and no loss.
func (o *opened) checkFlows(ctx context.Context, env part.Env) error {
	clients, servers, err := env.RunPods()
	if err != nil {
		return fmt.Errorf("flows: %w", err)
	}
	before, err := o.counts()
	if err != nil {
		return err
	}
	for i := 0; i < flowProbes; i++ {
		if _, err := part.Probe(env.Lab(), "flows "+o.check.Mechanism, clients[0], servers[0], "connect"); err != nil {
			return err
		}
	}
	c := &o.check
	c.Probes = flowProbes
	// Events reach the consumer in batches, at most 20 ms late.
	deadline := time.Now().Add(2 * time.Second)
	for {
		after, err := o.counts()
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

// counts sums the recorders' counts.
func (o *opened) counts() (flows.Counts, error) {
	sum := flows.Counts{ByKind: map[string]uint64{}, At: time.Now()}
	for _, r := range o.recs {
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

// Close removes the recorders and checks nothing of them is left.
func (o *opened) Close() error {
	var errs []error
	for i, r := range o.recs {
		errs = append(errs, r.Close())
		n := o.lab.Nodes[i]
		left, err := flows.Leftovers(flows.Site{Netns: netnsx.Path(n.Netns), Node: n.Name, Prefix: o.lab.Prefix}, flows.Options{})
		if err == nil && len(left) > 0 {
			err = fmt.Errorf("flows on %s: left after Close: %v", n.Name, left)
		}
		errs = append(errs, err)
	}
	o.recs = nil
	return errors.Join(errs...)
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
