// Package tuning applies the kernel tunings a benchmark compares (the
// tuning matrix: congestion control, GRO/GSO, conntrack bypass, busy
// polling) to network namespaces, proves each one held by reading it
// back, and puts back what was there. A tuning that cannot apply says so
// (ErrNotApplicable) so a run never measures it as if it had; the plan
// (Knob) is kept apart from what it did (Check).
package tuning

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
)

// Outcomes of a tuning in a scenario.
const (
	Applied       = "applied"
	NotApplicable = "not applicable"
	Failed        = "failed"
)

// ErrNotApplicable marks a tuning this machine or lab cannot have; the
// error says why.
var ErrNotApplicable = errors.New("not applicable")

// Site is one network namespace a tuning is applied in.
type Site struct {
	Netns string // path, /run/netns/cnb-x-node0
	Name  string // "node0", "node0-pod1": for messages
	Node  bool   // a node's namespace (it routes pods' traffic), else a pod's
	// Underlay is the namespace of the lab's underlay bridge (the
	// network between the nodes); only tunings that say so (Underlay)
	// apply there.
	Underlay bool
	Prefix   string // the lab's object prefix, "cnb-x-": names what we add
	// Overhead is what the lab's overlay adds to a pod's packet (50 bytes
	// for VXLAN, 0 for native routing): pods' MTU is the underlay's less it.
	Overhead int
	// PodCIDRs are the lab's pod address ranges (notrack matches traffic
	// between them).
	PodCIDRs []netip.Prefix
	// CPUs are the CPUs a node's work runs on in the run (node0's the
	// client CPUs, the other nodes' the server CPUs); empty when the run
	// pins nothing. Only node-rps reads them.
	CPUs []int
}

// Knob is one tuning, named as a scenario part ("cc-bbr", "gro-off").
type Knob interface {
	Name() string
	// About says in a phrase what it does, for --help and the report.
	About() string
	// Applicable is nil when the tuning can apply on this machine, else an
	// error wrapping ErrNotApplicable that says why not.
	Applicable() error
	// Apply sets the tuning in site and returns how to put back what was
	// there before (call it even when Verify fails).
	Apply(ctx context.Context, site Site) (undo func() error, err error)
	// Verify reads back what the kernel holds in site: a short account
	// ("bbr"), or an error when it is not what Apply set.
	Verify(ctx context.Context, site Site) (string, error)
}

// NodesOnly is a Knob that applies to the nodes' namespaces only (where
// traffic is routed), not the pods'.
type NodesOnly interface{ NodesOnly() bool }

// UnderlayToo is a Knob that applies to the underlay's namespace as well
// (the MTU: the network between the nodes must carry the nodes' packets).
type UnderlayToo interface{ UnderlayToo() bool }

// Sites are the sites of all that k applies to, in order.
func Sites(k Knob, all []Site) []Site {
	n, nodesOnly := k.(NodesOnly)
	u, underlay := k.(UnderlayToo)
	return slices.DeleteFunc(slices.Clone(all), func(s Site) bool {
		if s.Underlay {
			return !underlay || !u.UnderlayToo()
		}
		return nodesOnly && n.NodesOnly() && !s.Node
	})
}

// Check is what a scenario's tuning did, for the results.
type Check struct {
	Name   string `json:"name"`
	Status string `json:"status"` // Applied, NotApplicable or Failed
	// Detail is what was read back (applied) or why not.
	Detail string `json:"detail"`
	Sites  int    `json:"sites"` // namespaces it was verified in
}

// Run applies k in every site it applies to (Sites) and verifies it in
// each. The Check says
// what happened; undo puts every site back (a no-op when nothing was
// applied) and must be called whatever the outcome.
func Run(ctx context.Context, k Knob, all []Site) (c Check, undo func() error) {
	c = Check{Name: k.Name()}
	sites := Sites(k, all)
	var undos []func() error
	undo = func() error {
		var errs []error
		for _, u := range slices.Backward(undos) {
			errs = append(errs, u())
		}
		undos = nil
		return errors.Join(errs...)
	}
	if err := k.Applicable(); err != nil {
		c.Status, c.Detail = NotApplicable, why(err)
		if !errors.Is(err, ErrNotApplicable) {
			c.Status = Failed
		}
		return c, undo
	}
	seen := map[string]int{}
	for _, s := range sites {
		u, err := k.Apply(ctx, s)
		if u != nil {
			undos = append(undos, u)
		}
		if err == nil {
			var got string
			got, err = k.Verify(ctx, s)
			seen[got]++
		}
		if err != nil {
			c.Status, c.Detail = Failed, fmt.Sprintf("%s: %s", s.Name, why(err))
			if errors.Is(err, ErrNotApplicable) {
				c.Status = NotApplicable
			}
			return c, undo
		}
		c.Sites++
	}
	var parts []string
	for got, n := range seen {
		parts = append(parts, fmt.Sprintf("%s in %d namespaces", got, n))
	}
	slices.Sort(parts)
	c.Status, c.Detail = Applied, "read back: "+strings.Join(parts, "; ")
	return c, undo
}

// why is err's message without the "not applicable: " its status says.
func why(err error) string {
	return strings.Replace(err.Error(), ErrNotApplicable.Error()+": ", "", 1)
}
