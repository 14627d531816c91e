// Package policypart is L3/L4 NetworkPolicy on the run's pods as a
// scenario part: "policy" (servers accept only their clients, clients
// reach only their servers) and "policy-N" (N dummy rules in front of
// each server's real rule: a policy-scale step), enforced the way the
// Service datapath's family would (lab/policy), read back from every
// node's kernel and proved (an allowed connection connects, denied ones
// are dropped and counted by the kernel) before anything is measured.
package policypart

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cnibench/cnibench/internal/netnsx"
	"github.com/cnibench/cnibench/lab"
	"github.com/cnibench/cnibench/lab/policy"
	_ "github.com/cnibench/cnibench/lab/policy/all" // registers the enforcers policy.ForDatapath picks from
	"github.com/cnibench/cnibench/results"
	"github.com/cnibench/cnibench/targets/labtarget/part"
)

func init() {
	part.Register(part.Def{Help: []string{"policy", "policy-N"}, Parse: parse})
}

// parse reads "policy", or a policy-scale part "policy-N" / "policy-Nk"
// (N dummy rules per server pod in front of the real one, as N
// NetworkPolicy rules would be).
func parse(name string) (part.Part, bool, error) {
	if name == "policy" {
		return policyPart{name: name}, true, nil
	}
	num, ok := strings.CutPrefix(name, "policy-")
	if !ok {
		return nil, false, nil
	}
	mult := 1
	if v, k := strings.CutSuffix(num, "k"); k {
		num, mult = v, 1000
	}
	v, err := strconv.Atoi(num)
	if err != nil || v < 1 || v*mult > policy.MaxScalePeers {
		return nil, true, fmt.Errorf("%q: want policy-N with N rules per pod in 1..%d (e.g. policy-1000 or policy-10k)", name, policy.MaxScalePeers)
	}
	return policyPart{name: name, rules: v * mult}, true, nil
}

// policyPart is the policy, with rules dummy rules per server pod.
type policyPart struct {
	name  string // as written: "policy", "policy-1000", "policy-10k"
	rules int
}

func (p policyPart) Name() string { return p.name }

// Token is "pol", or "p250" / "p1k" / "p10k" for a policy-scale step.
func (p policyPart) Token() string {
	switch {
	case p.rules == 0:
		return "pol"
	case p.rules%1000 == 0:
		return fmt.Sprintf("p%dk", p.rules/1000)
	}
	return fmt.Sprintf("p%d", p.rules)
}

func (policyPart) Phase() part.Phase       { return part.Policy }
func (policyPart) Configure(c *lab.Config) {}

// Conflicts: policy twice, or with the per-node proxy, which connects to
// the servers from its node's address, a peer the benchmark's policy
// does not allow (a CNI allows its own proxy; this lab does not model
// that yet).
func (p policyPart) Conflicts(s part.Scenario) error {
	switch {
	case len(s.Others(p, func(q part.Part) bool { return q.Phase() == part.Policy })) > 0:
		return fmt.Errorf("policy and policy-N are the same feature: choose one")
	case s.Has("l7-node", "l7-egress"):
		return fmt.Errorf("policy with l7-node or l7-egress is not supported: the per-node proxy connects from its node's address, which the policy denies (l7-sidecar works with policy)")
	}
	return nil
}

// Open programs the policy for the run's pods on every node, reads it
// back and proves it enforces. Nothing is measured before that holds.
func (p policyPart) Open(ctx context.Context, env part.Env) (part.Opened, error) {
	l := env.Lab()
	v, err := policy.ForDatapath(l.Config.ServiceDatapath)
	if err != nil {
		return nil, err
	}
	clients, servers, err := env.RunPods()
	if err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	spec, err := policySpec(l, clients, servers, p.rules)
	if err != nil {
		return nil, err
	}
	env.Progress("programming L3/L4 policy (%s) for %d pods ...", v.Name, len(spec.Pods))
	o := &opened{name: p.name, check: results.PolicyCheck{Enforcer: v.Name, ScaleRules: p.rules}}
	start := time.Now()
	for _, n := range l.Nodes {
		e, err := v.Open(policy.Site{Netns: netnsx.Path(n.Netns), Node: n.Name,
			StateDir: filepath.Join(l.Config.StateDir, l.Config.Name), Prefix: l.Prefix})
		if err == nil {
			o.enforcers = append(o.enforcers, e)
			err = programPolicy(ctx, e, spec, &o.check.Counts)
		}
		if err != nil {
			env.Progress(" %s\n", part.FailedOr(ctx))
			return o, fmt.Errorf("policy %s on %s: %w", v.Name, n.Name, err)
		}
	}
	o.check.Program = time.Since(start)
	env.Progress(" %d rules verified in %s; checking enforcement ...", o.check.Counts.Rules, o.check.Program.Round(time.Millisecond))
	if err := o.checkEnforcement(ctx, l, clients, servers); err != nil {
		env.Progress(" %s\n", part.FailedOr(ctx))
		return o, err
	}
	env.Progress(" enforced (%d packets dropped by the denied probes)\n", o.check.Drops)
	return o, nil
}

// opened is the run's live policy: one enforcer per node.
type opened struct {
	name      string // the part's
	enforcers []policy.Enforcer
	check     results.PolicyCheck
}

// Checks implements part.Opened.
func (o *opened) Checks() []results.Check {
	return []results.Check{{Part: o.name, Label: results.PolicyLabel, Text: o.check.Text()}}
}

// AddDetails implements part.Detailer: the report's policy-scale
// analysis reads the rules and programming time there.
func (o *opened) AddDetails(d map[string]any) { d["policy"] = o.check }

// Close removes the enforcers' state from every node.
func (o *opened) Close() error {
	var errs []error
	for _, e := range o.enforcers {
		errs = append(errs, e.Close())
	}
	o.enforcers = nil
	return errors.Join(errs...)
}

// probe makes one probe and records it in the check.
func (o *opened) probe(l *lab.Lab, what, from, to, want string) error {
	p, err := part.Probe(l, what, from, to, want)
	if p.From != "" {
		o.check.Probes = append(o.check.Probes, p)
	}
	return err
}

// programPolicy programs one node's enforcer, reads it back and adds what
// the kernel holds to sum.
func programPolicy(ctx context.Context, e policy.Enforcer, spec policy.Spec, sum *results.PolicyCounts) error {
	if _, err := e.Program(ctx, spec); err != nil {
		return fmt.Errorf("programming: %w", err)
	}
	got, err := e.Verify(ctx)
	if err == nil {
		err = got.Holds(e.Expected(spec))
	}
	if err != nil {
		return fmt.Errorf("verify: %w", err)
	}
	sum.Pods += got.Pods
	sum.Rules += got.Rules
	sum.Peers += got.Peers
	sum.Chains += got.Chains
	sum.Elements += got.Elements
	sum.MapEntries += got.MapEntries
	return nil
}

// checkEnforcement proves the policy holds before anything is measured:
// a client connects to a server; a pod outside the clients cannot reach
// that server (ingress), and the client cannot reach a pod outside the
// servers (egress), both dropped and counted by the kernel.
func (o *opened) checkEnforcement(ctx context.Context, l *lab.Lab, clients, servers []string) error {
	c := &o.check
	what := "policy " + c.Enforcer
	client, server := clients[0], servers[0]
	if err := o.probe(l, what, client, server, "connect"); err != nil {
		return err
	}
	before, err := o.drops(ctx)
	if err != nil {
		return err
	}
	denied := 0
	if from := part.OtherPod(l, append(slices.Clone(clients), server)); from != "" {
		if err := o.probe(l, what, from, server, "drop"); err != nil {
			return err
		}
		denied++
	} else {
		c.Skipped = append(c.Skipped, "ingress: every pod but "+server+" is a client")
	}
	if to := part.OtherPod(l, append(slices.Clone(servers), clients...)); to != "" {
		if err := o.probe(l, what, client, to, "drop"); err != nil {
			return err
		}
		denied++
	} else {
		c.Skipped = append(c.Skipped, "egress: every pod but the clients is a server")
	}
	if denied == 0 {
		return errors.New("policy: no pod outside the allowed sets to probe from or to; a lab with more pods (--pods-per-node) can prove enforcement")
	}
	after, err := o.drops(ctx)
	if err != nil {
		return err
	}
	c.Drops = after - before
	if c.Drops < uint64(denied) {
		return fmt.Errorf("policy %s: the denied probes timed out but the kernel counted %d drops for %d probes: something else dropped them", c.Enforcer, c.Drops, denied)
	}
	return nil
}

// drops sums the enforcers' kernel drop counters.
func (o *opened) drops(ctx context.Context) (uint64, error) {
	var sum uint64
	for _, e := range o.enforcers {
		d, err := e.Drops(ctx)
		if err != nil {
			return 0, fmt.Errorf("policy %s: reading drops: %w", e.Name(), err)
		}
		sum += d
	}
	return sum, nil
}
