// Package iptables enforces policy.Spec with iptables and ipset in a lab
// node's namespace, laid out as Calico does: FORWARD jumps to our
// dispatch chain, which accepts established flows and sends each pod's
// packets to its ingress chain (by -o, the pod's host interface) and its
// egress chain (by -i); every Rule is one iptables rule per protocol
// matching an ipset of its peers ("-m set --match-set"), so the first
// packet of a flow walks a pod's rules one by one: N rules cost a slope,
// one rule with N peers one hash lookup. Denied packets go to one counted
// DROP rule, whose packet counter is Drops.
//
// A Program is one "ipset restore" (sets created and filled), one
// iptables-restore --noflush batch (chains rewritten), and one "ipset
// restore" destroying the sets no rule references any more. It uses the
// iptables-nft tools, under the node's xtables lock file like the
// Service datapath of package datapath/iptables. Traffic a pod sends to
// its own node (INPUT) is not policed, only forwarded traffic.
package iptables

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"github.com/cnibench/cnibench/datapath"
	"github.com/cnibench/cnibench/internal/kfeature"
	"github.com/cnibench/cnibench/internal/nsexec"
	"github.com/cnibench/cnibench/lab/policy"
	"github.com/cnibench/cnibench/lab/policy/internal/nfrule"
)

// Name is the enforcer's registered name.
const Name = "iptables"

const (
	restoreBin = "iptables-nft-restore"
	saveBin    = "iptables-nft-save"
	ipsetBin   = "ipset"
	timeout    = 10 * time.Minute // one tool run; 10,000 rules take seconds
)

func init() {
	policy.Register(policy.Variant{Name: Name, Family: []string{"iptables"}, Open: Open})
}

// Enforcer is the iptables policy of one node.
type Enforcer struct {
	mu    sync.Mutex
	site  policy.Site
	run   nsexec.Runner
	env   []string // the xtables lock of the node
	names names
	st    kernelState
	last  *policy.Spec // this node's part of the last spec programmed
	drift bool         // the kernel may not hold st: read it again
	base  uint64       // the drop counter when opened
	// preFilter: the namespace had a filter table before Open; if not,
	// Close deletes the one our rules made once it is empty again, so the
	// namespace's nftables ruleset is back to what it was.
	preFilter bool
}

var _ policy.Enforcer = (*Enforcer)(nil)

// Open returns the enforcer of site's node namespace, adopting what a
// previous instance left there (Program replaces it, Close removes it).
// It needs root, the iptables and ipset packages, and the kernel's ipset
// and set match; without them the error is a kfeature.Unsupported.
func Open(site policy.Site) (policy.Enforcer, error) {
	e, err := open(site)
	if err != nil {
		return nil, err // a nil interface, not a typed nil
	}
	return e, nil
}

func open(site policy.Site) (*Enforcer, error) {
	if err := site.Check(); err != nil {
		return nil, fmt.Errorf("policy iptables: %w", err)
	}
	n, err := newNames(site.Prefix)
	if err != nil {
		return nil, err
	}
	for _, bin := range []string{restoreBin, saveBin, ipsetBin} {
		if _, err := exec.LookPath(bin); err != nil {
			return nil, fmt.Errorf("policy iptables: %w: %s not found (Debian packages iptables, ipset)", errors.ErrUnsupported, bin)
		}
	}
	e := &Enforcer{site: site, run: nsexec.In(site.Netns), names: n}
	if site.StateDir != "" && site.Node != "" {
		e.env = []string{"XTABLES_LOCKFILE=" + filepath.Join(site.StateDir, site.Node+".xtables.lock")}
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	all, err := e.run.Run(ctx, e.env, nil, saveBin)
	if err != nil {
		return nil, fmt.Errorf("policy iptables: %w", kfeature.Check(saveBin, err))
	}
	e.preFilter = bytes.Contains(all, []byte("\n*filter\n")) || bytes.HasPrefix(all, []byte("*filter\n"))
	if err := e.probe(ctx); err != nil {
		return nil, err
	}
	if err := e.adopt(ctx); err != nil {
		return nil, err
	}
	d, err := e.dumpFilter(ctx)
	if err != nil {
		return nil, err
	}
	e.base = dropCount(d, n)
	return e, nil
}

// probe creates a set and a chain matching it, then removes both: the
// sample is fixed and known good, so a failure means the kernel lacks
// ipset or the set match.
func (e *Enforcer) probe(ctx context.Context) error {
	set, chain := e.names.p+"probe", e.names.p+"PROBE"
	unsupported := func(err error) error {
		return fmt.Errorf("policy iptables: %w", &kfeature.Unsupported{Feature: "ipset sets and the iptables set match",
			Detail: kfeature.Detail(err), Err: err})
	}
	if _, err := e.ipset(ctx, fmt.Appendf(nil, "create %s hash:net family inet hashsize 64\n", set)); err != nil {
		return unsupported(err)
	}
	_, err := e.restore(ctx, fmt.Appendf(nil, "*filter\n:%s - [0:0]\n-A %s -m set --match-set %s src -j RETURN\nCOMMIT\n", chain, chain, set))
	if err == nil {
		_, err = e.restore(ctx, fmt.Appendf(nil, "*filter\n:%s - [0:0]\n-X %s\nCOMMIT\n", chain, chain))
	}
	if _, derr := e.ipset(ctx, fmt.Appendf(nil, "destroy %s\n", set)); err == nil && derr != nil {
		return fmt.Errorf("policy iptables: remove probe set: %w", derr)
	}
	if err != nil {
		return unsupported(err)
	}
	return nil
}

// adopt reads which of our objects the kernel holds.
func (e *Enforcer) adopt(ctx context.Context) error {
	d, err := e.dumpFilter(ctx)
	if err != nil {
		return err
	}
	sets, err := e.dumpSets(ctx)
	if err != nil {
		return err
	}
	n := e.names
	st := kernelState{chains: map[string]bool{}, sets: map[string]bool{}}
	for c := range d.chains {
		if c != n.fwd() && c != n.drop() {
			st.chains[c] = true
		}
	}
	for s := range sets {
		st.sets[s] = true
	}
	st.haveFwd = d.chains[n.fwd()] && hasJump(d, "FORWARD", n.fwd())
	st.haveDrp = len(d.rules[n.drop()]) == 1 && d.rules[n.drop()][0].opt("-j") == "DROP"
	e.st, e.drift = st, false
	return nil
}

func hasJump(d filterDump, from, to string) bool {
	for _, r := range d.rules[from] {
		if r.opt("-j") == to {
			return true
		}
	}
	return false
}

// Name is "iptables".
func (e *Enforcer) Name() string { return Name }

// Program makes the node hold exactly spec.OnNode(node). A failed step
// leaves the enforcer to read the kernel again on the next Program.
func (e *Enforcer) Program(ctx context.Context, spec policy.Spec) (st datapath.ProgramStats, err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var b batch
	var reread time.Duration
	spec, b, st.Generate, reread, err = nfrule.Generate(ctx, Name, spec, e.site.Node, e.drift, e.adopt,
		func(s policy.Spec) (batch, error) { return generate(s, e.names, e.st) })
	if err != nil {
		return st, err
	}
	st.Bytes = len(b.sets) + len(b.rules) + len(b.destroy)
	t1 := time.Now()
	defer func() { st.Apply = time.Since(t1) + reread }()
	e.drift = true // until every step succeeded
	if len(b.sets) > 0 {
		if _, err := e.ipset(ctx, b.sets); err != nil {
			return st, fmt.Errorf("policy iptables: sets of %d pods: %w", len(spec.Pods), err)
		}
	}
	if _, err := e.restore(ctx, b.rules); err != nil {
		return st, fmt.Errorf("policy iptables: rules of %d pods: %w", len(spec.Pods), err)
	}
	if len(b.destroy) > 0 {
		if _, err := e.ipset(ctx, b.destroy); err != nil {
			return st, fmt.Errorf("policy iptables: remove stale sets: %w", err)
		}
	}
	e.st = kernelState{chains: b.chains, sets: b.setNames, haveFwd: true, haveDrp: true}
	e.drift = false
	e.last = &spec
	return st, nil
}

// restore feeds text to iptables-nft-restore --noflush in the namespace.
func (e *Enforcer) restore(ctx context.Context, text []byte) ([]byte, error) {
	return e.run.Run(ctx, e.env, text, restoreBin, "--wait=5", "--noflush")
}

// ipset feeds text to "ipset restore" in the namespace.
func (e *Enforcer) ipset(ctx context.Context, text []byte) ([]byte, error) {
	return e.run.Run(ctx, nil, text, ipsetBin, "restore")
}

func (e *Enforcer) dumpFilter(ctx context.Context) (filterDump, error) {
	out, err := e.run.Run(ctx, e.env, nil, saveBin, "-c", "-t", "filter")
	if err != nil {
		return filterDump{}, fmt.Errorf("policy iptables: %w", err)
	}
	d, err := parseFilter(out, e.names.ours())
	if err != nil {
		return d, fmt.Errorf("policy iptables: %s: %w", saveBin, err)
	}
	return d, nil
}

func (e *Enforcer) dumpSets(ctx context.Context) (map[string]map[netip.Prefix]bool, error) {
	out, err := e.run.Run(ctx, nil, nil, ipsetBin, "save")
	if err != nil {
		return nil, fmt.Errorf("policy iptables: %w", err)
	}
	s, err := parseIpset(out, e.names.ours())
	if err != nil {
		return nil, fmt.Errorf("policy iptables: %w", err)
	}
	return s, nil
}
