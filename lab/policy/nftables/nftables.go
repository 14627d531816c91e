// Package nftables enforces policy.Spec with nftables in a lab node's
// namespace, through sigs.k8s.io/knftables as kube-proxy does, in a table
// of our own (ip <prefix>policy): a base chain at the forward hook
// accepts established flows and jumps to each pod's ingress chain (by
// oifname, the pod's host interface) and egress chain (by iifname); a
// pod chain returns what a rule allows and ends in a drop counted by the
// table's named counter "drops" (a named counter survives the chain
// rewrites of later Programs, so Drops counts since Open).
//
// A rule's peers go in a named interval set of its own, "<dir>-<pod>-<i>":
// named rather than anonymous so Verify reads every element back from the
// listing with its set's name, and so that a later rule change can be one
// set's elements (a rule whose peers reduce to one prefix matches it
// inline, as the iptables enforcer does; see nfrule.Inline). Ports are an
// anonymous set in the rule ("tcp dport { 80, 443 }"). One Program is one
// nft transaction: chains and sets flushed and refilled, what the spec no
// longer has deleted, atomically.
package nftables

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"sync"
	"time"

	"sigs.k8s.io/knftables"

	"github.com/cnibench/cnibench/datapath"
	"github.com/cnibench/cnibench/internal/kfeature"
	"github.com/cnibench/cnibench/internal/netnsx"
	"github.com/cnibench/cnibench/internal/nsexec"
	"github.com/cnibench/cnibench/lab/policy"
	"github.com/cnibench/cnibench/lab/policy/internal/nfrule"
)

// Name is the enforcer's registered name.
const Name = "nftables"

const (
	baseChain = "policy-forward"
	drops     = "drops"
	timeout   = 10 * time.Minute
)

func init() {
	policy.Register(policy.Variant{Name: Name, Family: []string{"nftables"}, Open: Open})
}

// Enforcer is the nftables policy of one node.
type Enforcer struct {
	mu    sync.Mutex
	site  policy.Site
	table string
	nft   knftables.Interface
	run   nsexec.Runner // nft listings, in the namespace
	prev  objects       // what of ours the kernel holds
	last  *policy.Spec  // this node's part of the last spec programmed
	drift bool          // prev may be wrong: list the kernel again
	base  uint64        // the drop counter when opened
}

// objects are the pod chains and sets of our table.
type objects struct{ chains, sets map[string]bool }

var _ policy.Enforcer = (*Enforcer)(nil)

// Open returns the enforcer of site's node namespace, adopting what an
// earlier instance left in our table. It needs root and nft; a kernel
// refusing the objects we use gives a kfeature.Unsupported.
func Open(site policy.Site) (policy.Enforcer, error) {
	e, err := open(site)
	if err != nil {
		return nil, err // a nil interface, not a typed nil
	}
	return e, nil
}

func open(site policy.Site) (*Enforcer, error) {
	if err := site.Check(); err != nil {
		return nil, fmt.Errorf("policy nftables: %w", err)
	}
	if _, err := exec.LookPath("nft"); err != nil {
		return nil, fmt.Errorf("policy nftables: %w: nft not found (Debian package nftables)", errors.ErrUnsupported)
	}
	e := &Enforcer{site: site, table: site.Prefix + "policy", run: nsexec.In(site.Netns), drift: true}
	err := netnsx.Do(site.Netns, func() error {
		var err error
		e.nft, err = knftables.New(knftables.IPv4Family, e.table)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("policy nftables: %w", &kfeature.Unsupported{Feature: "nftables", Detail: kfeature.Detail(err), Err: err})
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := e.probe(ctx); err != nil {
		return nil, err
	}
	if e.base, err = e.dropCount(ctx); err != nil {
		return nil, err
	}
	return e, nil
}

// probe asks the kernel (nft --check: nothing committed) for every kind of
// object and statement we use, with a fixed sample: a refusal is a
// missing feature, never our layout (that fails in Program).
func (e *Enforcer) probe(ctx context.Context) error {
	tx := e.nft.NewTransaction()
	tx.Add(&knftables.Table{})
	tx.Add(&knftables.Counter{Name: drops})
	addBase(tx)
	tx.Add(&knftables.Chain{Name: "ingress-probe"})
	tx.Add(&knftables.Set{Name: "ingress-probe-0", Type: "ipv4_addr", Flags: []knftables.SetFlag{knftables.IntervalFlag}})
	tx.Add(&knftables.Element{Set: "ingress-probe-0", Key: []string{"10.0.0.0/8"}})
	for _, r := range []knftables.Rule{
		{Chain: baseChain, Rule: "ct state established,related accept"},
		{Chain: baseChain, Rule: `oifname "probe0" jump ingress-probe`},
		{Chain: "ingress-probe", Rule: "ip saddr @ingress-probe-0 tcp dport { 80, 443 } return"},
		{Chain: "ingress-probe", Rule: "ip daddr 10.0.0.1/32 meta l4proto udp return"},
		{Chain: "ingress-probe", Rule: `counter name "drops" drop`},
	} {
		tx.Add(&r)
	}
	if err := netnsx.Do(e.site.Netns, func() error { return e.nft.Check(ctx, tx) }); err != nil {
		return fmt.Errorf("policy nftables: %w", &kfeature.Unsupported{Feature: "nftables sets, named counters and forward-hook chains",
			Detail: kfeature.Detail(err), Err: err})
	}
	return nil
}

func addBase(tx *knftables.Transaction) {
	tx.Add(&knftables.Chain{Name: baseChain, Type: knftables.PtrTo(knftables.FilterType),
		Hook: knftables.PtrTo(knftables.ForwardHook), Priority: knftables.PtrTo(knftables.FilterPriority)})
}

// Name is "nftables".
func (e *Enforcer) Name() string { return Name }

// Program makes our table hold exactly spec.OnNode(node) in one
// transaction.
func (e *Enforcer) Program(ctx context.Context, spec policy.Spec) (st datapath.ProgramStats, err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var now objects
	var tx *knftables.Transaction
	var reread time.Duration
	spec, tx, st.Generate, reread, err = nfrule.Generate(ctx, Name, spec, e.site.Node, e.drift, e.adopt,
		func(s policy.Spec) (tx *knftables.Transaction, err error) {
			tx, now, err = transaction(e.nft.NewTransaction(), s, e.prev)
			return tx, err
		})
	if err != nil {
		return st, err
	}
	st.Bytes = len(tx.String())
	t1 := time.Now()
	err = netnsx.Do(e.site.Netns, func() error { return e.nft.Run(ctx, tx) })
	st.Apply = time.Since(t1) + reread
	if err != nil {
		e.drift = true
		return st, fmt.Errorf("policy nftables: transaction of %d pods: %w", len(spec.Pods), err)
	}
	e.prev, e.drift, e.last = now, false, &spec
	return st, nil
}

// adopt lists the chains and sets our table holds (none if it is absent).
func (e *Enforcer) adopt(ctx context.Context) error {
	o := objects{chains: map[string]bool{}, sets: map[string]bool{}}
	for kind, m := range map[string]map[string]bool{"chains": o.chains, "sets": o.sets} {
		var names []string
		err := netnsx.Do(e.site.Netns, func() error {
			var err error
			names, err = e.nft.List(ctx, kind)
			return err
		})
		if err != nil && !knftables.IsNotFound(err) {
			return fmt.Errorf("policy nftables: list %s: %w", kind, err)
		}
		for _, n := range names {
			if n != baseChain {
				m[n] = true
			}
		}
	}
	e.prev, e.drift = o, false
	return nil
}
