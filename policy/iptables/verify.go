package iptables

import (
	"context"
	"fmt"
	"net/netip"
	"strings"

	"github.com/cnibench/cnibench/policy"
	"github.com/cnibench/cnibench/policy/internal/nfrule"
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
	if first == nil {
		if want := e.Expected(*e.last); c != want {
			first = fmt.Errorf("kernel holds %+v, want %+v", c, want)
		}
	}
	if first != nil {
		e.drift = true
		return c, fmt.Errorf("policy iptables: node %s: %w", e.site.Node, first)
	}
	return c, nil
}

// check counts pods, rules and peers of the last spec found in d and sets
// into c, returning the first piece missing.
func (e *Enforcer) check(d filterDump, sets map[string]map[netip.Prefix]bool, c *policy.Counts) error {
	n := e.names
	var first error
	miss := func(format string, a ...any) {
		if first == nil {
			first = fmt.Errorf(format, a...)
		}
	}
	switch {
	case !hasJump(d, "FORWARD", n.fwd()):
		miss("no jump from FORWARD to %s", n.fwd())
	case len(d.rules[n.drop()]) != 1:
		miss("chain %s has %d rules, want its one DROP", n.drop(), len(d.rules[n.drop()]))
	}
	dispatch := map[string]bool{}
	for _, r := range d.rules[n.fwd()] {
		dispatch[r.opt("-o")+">"+r.opt("-i")+">"+r.opt("-j")] = true
	}
	explained := map[string]bool{}
	for _, p := range e.last.Pods {
		podOK, sel := true, false
		for _, dir := range nfrule.Dirs(p) {
			if !dir.Selected() {
				continue
			}
			sel = true
			ch := n.chain(p.Pod, dir)
			key := p.HostIface + ">>" + ch
			if dir.Peer == "dst" {
				key = ">" + p.HostIface + ">" + ch
			}
			if !d.chains[ch] || !dispatch[key] {
				podOK = false
				miss("pod %s %s: chain %s missing or not dispatched from %s", p.Pod, dir.Name, ch, n.fwd())
			}
			have := map[string]bool{}
			for _, r := range d.rules[ch] {
				have[r.key()] = true
			}
			for i, r := range dir.Rules {
				set := n.set(p.Pod, dir, i)
				inline, isInline := nfrule.Inline(r)
				match := set
				if isInline {
					match = inline.String()
				}
				ok := true
				for _, g := range nfrule.Groups(r.Ports, nfrule.MaxMultiport) {
					k := ruleKey(match, dir.Peer, g.Proto, g.PortString())
					explained[ch+" "+k] = true
					ok = ok && have[k]
				}
				if ok {
					c.Rules++
				} else {
					miss("%s: iptables rule matching %s missing from %s", nfrule.Describe(p.Pod, dir, i), match, ch)
				}
				if isInline {
					if ok {
						c.Peers += nfrule.Distinct(r.Peers)
					}
					continue
				}
				got := nfrule.Covered(r.Peers, sets[set])
				c.Peers += got
				if want := nfrule.Distinct(r.Peers); got != want {
					miss("%s: set %s covers %d of %d peers", nfrule.Describe(p.Pod, dir, i), set, got, want)
				}
			}
		}
		if sel && podOK {
			c.Pods++
		}
	}
	for ch, rules := range d.rules {
		if !strings.HasPrefix(ch, n.ours()) {
			continue
		}
		for _, r := range rules {
			if k := r.key(); k != "" && !explained[ch+" "+k] {
				c.Rules++
				miss("chain %s holds an allow rule no policy rule explains: %s", ch, strings.Join(r.args, " "))
			}
		}
	}
	return first
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
