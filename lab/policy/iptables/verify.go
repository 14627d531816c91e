package iptables

import (
	"context"
	"fmt"
	"net/netip"
	"strings"

	"github.com/cnibench/cnibench/lab/policy"
	"github.com/cnibench/cnibench/lab/policy/internal/nfrule"
)

// Expected is what Verify should read back for spec on this node: our
// chains are FWD, DROP and one per selected direction of a pod.
func (e *Enforcer) Expected(spec policy.Spec) policy.Counts {
	t := nfrule.Count(spec.OnNode(e.site.Node), nfrule.MaxMultiport)
	return policy.Counts{Pods: t.Pods, Rules: t.Rules, Peers: t.Peers, Chains: 2 + t.PodChains, Elements: t.Elements}
}

// Verify reads the filter table and the sets back. It counts a pod when
// its chains exist and FWD dispatches to them, a rule when every
// iptables rule of it is in its pod's chain (an allow rule of ours that no
// rule of the spec explains counts too, so extra rules show), a peer when
// its rule's set covers it. The error names the first piece missing, or
// the counts when they differ from Expected (the drift is repaired by the
// next Program).
func (e *Enforcer) Verify(ctx context.Context) (policy.Counts, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	d, err := e.dumpFilter(ctx)
	if err != nil {
		return policy.Counts{}, err
	}
	sets, err := e.dumpSets(ctx)
	if err != nil {
		return policy.Counts{}, err
	}
	c := policy.Counts{Chains: len(d.chains)}
	for _, s := range sets {
		c.Elements += len(s)
	}
	if e.last == nil {
		return c, nil
	}
	first := e.check(d, sets, &c)
	if err := nfrule.Judge(Name, e.site.Node, first, c, e.Expected(*e.last)); err != nil {
		e.drift = true
		return c, err
	}
	return c, nil
}

// check counts pods, rules and peers of the last spec found in d and sets
// into c (nfrule.Check), after the fixed pieces, returning the first
// piece missing.
func (e *Enforcer) check(d filterDump, sets map[string]map[netip.Prefix]bool, c *policy.Counts) error {
	n := e.names
	var fixed error
	switch {
	case !hasJump(d, "FORWARD", n.fwd()):
		fixed = fmt.Errorf("no jump from FORWARD to %s", n.fwd())
	case len(d.rules[n.drop()]) != 1:
		fixed = fmt.Errorf("chain %s has %d rules, want its one DROP", n.drop(), len(d.rules[n.drop()]))
	}
	v := nfrule.NewView()
	v.Sets = sets
	dirs := nfrule.Dirs(policy.PodPolicy{})
	for ch := range d.chains {
		if ch != n.fwd() && ch != n.drop() {
			v.Chains[ch] = true
		}
	}
	for _, r := range d.rules[n.fwd()] {
		if o := r.opt("-o"); o != "" {
			v.Dispatch[nfrule.DispatchKey(dirs[0], o, r.opt("-j"))] = true
		}
		if i := r.opt("-i"); i != "" {
			v.Dispatch[nfrule.DispatchKey(dirs[1], i, r.opt("-j"))] = true
		}
	}
	for ch := range v.Chains {
		for _, r := range d.rules[ch] {
			if k := r.key(); k != "" {
				v.AddAllow(ch, k, strings.Join(r.args, " "))
			}
		}
	}
	err := nfrule.Check(*e.last, v, n, nfrule.MaxMultiport, c)
	if fixed != nil {
		return fixed
	}
	return err
}

// Drops is the packet counter of our DROP rule since Open (every pod
// chain ends in a jump to it).
func (e *Enforcer) Drops(ctx context.Context) (uint64, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	d, err := e.dumpFilter(ctx)
	if err != nil {
		return 0, err
	}
	c := dropCount(d, e.names)
	if c < e.base { // the DROP chain was recreated (a repair): count anew
		e.base = 0
	}
	return c - e.base, nil
}

func dropCount(d filterDump, n names) uint64 {
	var p uint64
	for _, r := range d.rules[n.drop()] {
		if r.opt("-j") == "DROP" {
			p += r.packets
		}
	}
	return p
}
