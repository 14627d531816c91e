package nftables

import (
	"context"
	"fmt"
	"strings"

	"sigs.k8s.io/knftables"

	"github.com/cnibench/cnibench/internal/netnsx"
	"github.com/cnibench/cnibench/lab/policy"
	"github.com/cnibench/cnibench/lab/policy/internal/nfrule"
)

// Expected is what Verify should read back for spec on this node: the
// base chain and one chain per selected direction of a pod.
func (e *Enforcer) Expected(spec policy.Spec) policy.Counts {
	t := nfrule.Count(spec.OnNode(e.site.Node), 0)
	return policy.Counts{Pods: t.Pods, Rules: t.Rules, Peers: t.Peers, Chains: 1 + t.PodChains, Elements: t.Elements}
}

// list reads our table back; nil when it does not exist.
func (e *Enforcer) list(ctx context.Context) (*listing, error) {
	out, err := e.run.Run(ctx, nil, nil, "nft", "-j", "list", "table", "ip", e.table)
	if err != nil {
		if strings.Contains(err.Error(), "No such file or directory") {
			return nil, nil
		}
		return nil, fmt.Errorf("policy nftables: list table ip %s: %w", e.table, err)
	}
	l, err := parseListing(out, e.table)
	if err != nil {
		return nil, fmt.Errorf("policy nftables: %w", err)
	}
	return l, nil
}

// Verify lists our table and compares it with the last spec (see
// nfrule.Check: pods dispatched, rules present, peers covered), after the
// fixed pieces: the base chain at the forward hook with its
// established-flows rule, the drops counter, and one counted drop ending
// each pod chain. The error names the first piece missing, or the counts
// when they differ from Expected (the next Program repairs it).
func (e *Enforcer) Verify(ctx context.Context) (policy.Counts, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	l, err := e.list(ctx)
	if err != nil {
		return policy.Counts{}, err
	}
	var c policy.Counts
	if l != nil {
		c.Chains, c.Elements = l.chains, l.elements
	}
	if e.last == nil {
		return c, nil
	}
	if l == nil {
		e.drift = true
		return c, fmt.Errorf("policy nftables: node %s: table ip %s missing", e.site.Node, e.table)
	}
	first := e.fixed(l)
	if err := nfrule.Check(*e.last, l.view, namer{}, 0, &c); first == nil {
		first = err
	}
	if err := nfrule.Judge(Name, e.site.Node, first, c, e.Expected(*e.last)); err != nil {
		e.drift = true
		return c, err
	}
	return c, nil
}

func (e *Enforcer) fixed(l *listing) error {
	switch {
	case !l.base:
		return fmt.Errorf("base chain %s missing or not at the forward hook", baseChain)
	case !l.ctAccept:
		return fmt.Errorf("base chain %s lacks its established-flows accept", baseChain)
	case !l.counter:
		return fmt.Errorf("counter %s missing", drops)
	}
	for _, p := range e.last.Pods {
		for _, d := range nfrule.Dirs(p) {
			if ch := (namer{}).Chain(p.Pod, d); d.Selected() && l.dropRules[ch] != 1 {
				return fmt.Errorf("pod %s %s: chain %s has %d counted drops, want 1", p.Pod, d.Name, ch, l.dropRules[ch])
			}
		}
	}
	return nil
}

// Drops is the drops counter since Open.
func (e *Enforcer) Drops(ctx context.Context) (uint64, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	c, err := e.dropCount(ctx)
	if err != nil {
		return 0, err
	}
	if c < e.base { // the table was recreated: count anew
		e.base = 0
	}
	return c - e.base, nil
}

func (e *Enforcer) dropCount(ctx context.Context) (uint64, error) {
	l, err := e.list(ctx)
	if err != nil || l == nil {
		return 0, err
	}
	return l.packets, nil
}

// Close deletes our table (everything of ours is in it), in one
// transaction that adds it first so that a missing table is no error.
func (e *Enforcer) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	tx := e.nft.NewTransaction()
	tx.Add(&knftables.Table{})
	tx.Delete(&knftables.Table{})
	if err := netnsx.Do(e.site.Netns, func() error { return e.nft.Run(ctx, tx) }); err != nil {
		return fmt.Errorf("policy nftables: delete table ip %s: %w", e.table, err)
	}
	e.prev, e.last, e.drift, e.base = objects{}, nil, true, 0
	return nil
}
