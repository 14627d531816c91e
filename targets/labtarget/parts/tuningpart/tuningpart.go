// Package tuningpart makes each kernel tuning of lab/tuning a scenario
// part ("cc-bbr", "gro-off", "mtu-9000", "notrack", …): applied in every
// namespace it concerns before the agents' sysctls are read, read back,
// undone at close. One that did not apply is recorded as such and the
// scenario measures nothing under it.
package tuningpart

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/cnibench/cnibench/datapath"
	"github.com/cnibench/cnibench/lab"
	"github.com/cnibench/cnibench/lab/tuning"
	"github.com/cnibench/cnibench/results"
	"github.com/cnibench/cnibench/suite"
	"github.com/cnibench/cnibench/targets/labtarget/part"
)

func init() {
	part.Register(part.Def{Help: tuning.Names(), Parse: func(name string) (part.Part, bool, error) {
		k, ok := tuning.Lookup(name)
		if !ok {
			return nil, false, nil
		}
		return knobPart{k}, true, nil
	}})
}

// knobPart is one tuning as a part.
type knobPart struct{ k tuning.Knob }

func (p knobPart) Name() string            { return p.k.Name() }
func (p knobPart) Phase() part.Phase       { return part.Tuning }
func (p knobPart) Configure(c *lab.Config) {}

// Token is the lab-name token: "cc-bbr" is "bbr", "mtu-9000" "m9000",
// "gro-on" "gro", "gro-off" "ngro", "notrack" "ntr", "busy-poll" "bpol".
func (p knobPart) Token() string {
	name := p.Name()
	if algo, ok := strings.CutPrefix(name, "cc-"); ok {
		return algo
	}
	if n, ok := strings.CutPrefix(name, "mtu-"); ok {
		return "m" + n
	}
	return map[string]string{"gro-on": "gro", "gro-off": "ngro", "gso-on": "gso", "gso-off": "ngso", "notrack": "ntr", "busy-poll": "bpol", "node-rps": "rps"}[name]
}

// Conflicts: notrack where conntrack is needed (the per-node proxies'
// DNAT; a netfilter enforcer's "established" rule and NFLOG flow
// recorder, which log and accept by conntrack state; the eBPF enforcer
// and recorder keep their own), or an MTU on an encrypted lab, whose
// WireGuard devices keep the MTU the lab was built with.
func (p knobPart) Conflicts(s part.Scenario) error {
	netfilter := true
	if v, ok := datapath.Lookup(s.Lab.ServiceDatapath); ok {
		netfilter = v.Netfilter
	}
	inPhase := func(ph part.Phase) bool {
		return len(s.Others(p, func(q part.Part) bool { return q.Phase() == ph })) > 0
	}
	switch {
	case p.Name() == "notrack" && s.Has("l7-node", "l7-egress"):
		return fmt.Errorf("notrack with l7-node or l7-egress is not supported: the per-node proxy's DNAT needs conntrack in the node")
	case p.Name() == "notrack" && inPhase(part.Policy) && netfilter:
		return fmt.Errorf("notrack with policy on a netfilter datapath is not supported: the enforcer accepts replies by conntrack state (an eBPF datapath's enforcer keeps its own)")
	case p.Name() == "notrack" && inPhase(part.Flows) && netfilter:
		return fmt.Errorf("notrack with flows on a netfilter datapath is not supported: NFLOG records a flow's first packet by conntrack state, which untracked packets never get (an eBPF datapath's ring buffer does not need it)")
	case strings.HasPrefix(p.Name(), "mtu-") && s.Lab.Encryption != "":
		return fmt.Errorf("mtu-N with %s is not supported: the WireGuard devices keep the MTU the lab was built with", s.Lab.Encryption)
	}
	return nil
}

// Open applies the tuning in every namespace it concerns and reads it
// back; one that does not apply is no error: the run goes on with the
// other scenarios, and this one measures nothing (Unsupported).
func (p knobPart) Open(ctx context.Context, env part.Env) (part.Opened, error) {
	l := env.Lab()
	sites := tuning.LabSites(l)
	for i := range sites {
		for j, n := range l.Nodes {
			if n.Name == sites[i].Name {
				sites[i].CPUs = env.NodeCPUs(j)
			}
		}
	}
	env.Progress("tuning %s ...", p.Name())
	c, undo := tuning.Run(ctx, p.k, sites)
	o := &opened{check: c, undo: undo, lab: l}
	if err := ctx.Err(); err != nil {
		env.Progress(" interrupted\n")
		return o, err
	}
	env.Progress(" %s\n", c.Status)
	if c.Status != tuning.Applied {
		o.skip = fmt.Sprintf("tuning %s %s: %s; nothing measured under it", p.Name(), c.Status, c.Detail)
		env.Note(o.skip)
	}
	return o, nil
}

// opened is what a tuning did and how to undo it.
type opened struct {
	check tuning.Check
	undo  func() error
	lab   *lab.Lab
	// skip is why nothing is measured in this scenario ("" when the
	// tuning applied): never measured as if it had held.
	skip string
}

func (o *opened) record() results.TuningCheck { return results.TuningCheck(o.check) }

// Checks implements part.Opened.
func (o *opened) Checks() []results.Check {
	return []results.Check{{Part: o.check.Name, Label: results.TuningLabel, Text: o.record().Text()}}
}

// Close puts back what the tuning changed.
func (o *opened) Close() error {
	if o.undo == nil {
		return nil
	}
	err := o.undo()
	o.undo = nil
	if err != nil {
		return fmt.Errorf("undo tuning: %w", err)
	}
	return nil
}

// AddDetails appends the tuning's record to the details' "tuning" list;
// an applied mtu-N sets "mtu" to the pods' MTU the kernel held while
// measuring, not what the lab was built with.
func (o *opened) AddDetails(d map[string]any) {
	list, _ := d["tuning"].([]results.TuningCheck)
	d["tuning"] = append(list, o.record())
	if n, ok := strings.CutPrefix(o.check.Name, "mtu-"); ok && o.check.Status == tuning.Applied {
		v, _ := strconv.Atoi(n)
		d["mtu"] = v - (lab.MTU - o.lab.MTU) // less what the overlay takes
	}
}

// Unsupported: nothing when the tuning did not apply; with notrack, a
// path whose Service translation needs conntrack (kube-proxy's NAT: the
// backend's replies would not be translated back).
func (o *opened) Unsupported(placement string) error {
	if o.skip != "" {
		return fmt.Errorf("%s: %w", o.skip, suite.ErrUnsupported)
	}
	dp := o.lab.Config.ServiceDatapath
	if v, ok := datapath.Lookup(dp); o.check.Name == "notrack" && suite.IsServicePlacement(placement) && ok && v.Netfilter {
		return fmt.Errorf("notrack on %s: %s translates Services with conntrack's NAT, which untracked replies bypass: %w", placement, dp, suite.ErrUnsupported)
	}
	return nil
}
