package labtarget

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"path/filepath"
	"time"

	"github.com/cnibench/cnibench/datapath"
	"github.com/cnibench/cnibench/internal/netnsx"
	"github.com/cnibench/cnibench/lab"
	"github.com/cnibench/cnibench/lab/policy"
	_ "github.com/cnibench/cnibench/lab/policy/all" // registers the enforcers policy.ForDatapath picks from
)

// PolicyCheck is what the run programmed as L3/L4 policy and how it
// proved enforcement before measuring; results keep it in the target's
// details, and the report shows it beside the numbers.
type PolicyCheck struct {
	Enforcer string        `json:"enforcer"`
	Counts   policy.Counts `json:"counts"`     // read back from every node's kernel, summed
	Program  time.Duration `json:"program_ns"` // programming and read-back, all nodes
	Probes   []Probe       `json:"probes"`
	// Drops: packets the enforcers counted as dropped during the denied
	// probes (read from the kernel before and after).
	Drops uint64 `json:"drops"`
	// Skipped says why a probe direction could not be made.
	Skipped []string `json:"skipped,omitempty"`
	// ScaleRules: dummy rules per server pod in front of its real rule
	// (a policy-N scenario; lab.Config.PolicyRules).
	ScaleRules int `json:"scale_rules,omitempty"`
}

// policyState is the run's live policy: one enforcer per node.
type policyState struct {
	enforcers []policy.Enforcer
	check     PolicyCheck
}

// openPolicy programs the lab's policy (lab.Config.Policy) for the run's
// pods, reads it back and proves it enforces: an allowed connection
// connects, denied ones are dropped and counted by the kernel. Nothing is
// measured before that holds.
func (t *Target) openPolicy(ctx context.Context) error {
	if !t.lab.Config.Policy {
		return nil
	}
	v, err := policy.ForDatapath(t.lab.Config.ServiceDatapath)
	if err != nil {
		return err
	}
	clients, servers, err := t.runPods()
	if err != nil {
		return fmt.Errorf("policy: %w", err)
	}
	spec, err := policySpec(t.lab, clients, servers, t.lab.Config.PolicyRules)
	if err != nil {
		return err
	}
	t.progress("programming L3/L4 policy (%s) for %d pods ...", v.Name, len(spec.Pods))
	t.policy = &policyState{check: PolicyCheck{Enforcer: v.Name, ScaleRules: t.lab.Config.PolicyRules}}
	start := time.Now()
	for _, n := range t.lab.Nodes {
		e, err := v.Open(policy.Site{Netns: netnsx.Path(n.Netns), Node: n.Name,
			StateDir: filepath.Join(t.lab.Config.StateDir, t.lab.Config.Name), Prefix: t.lab.Prefix})
		if err == nil {
			t.policy.enforcers = append(t.policy.enforcers, e)
			err = programPolicy(ctx, e, spec, &t.policy.check.Counts)
		}
		if err != nil {
			t.progress(" %s\n", failedOr(ctx))
			return fmt.Errorf("policy %s on %s: %w", v.Name, n.Name, err)
		}
	}
	t.policy.check.Program = time.Since(start)
	t.progress(" %d rules verified in %s; checking enforcement ...", t.policy.check.Counts.Rules, t.policy.check.Program.Round(time.Millisecond))
	if err := t.checkEnforcement(ctx, clients, servers); err != nil {
		t.progress(" %s\n", failedOr(ctx))
		return err
	}
	t.progress(" enforced (%d packets dropped by the denied probes)\n", t.policy.check.Drops)
	return nil
}

// programPolicy programs one node's enforcer, reads it back and adds what
// the kernel holds to sum.
func programPolicy(ctx context.Context, e policy.Enforcer, spec policy.Spec, sum *policy.Counts) error {
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

// runPods splits the run's pod endpoints into clients and servers (an
// endpoint that is a client anywhere is a client, as agents are pinned):
// what policy and L7 proxies are put on.
func (t *Target) runPods() (clients, servers []string, err error) {
	order, isClient, err := t.endpoints(t.lab)
	if err != nil {
		return nil, nil, err
	}
	for _, ep := range order {
		e, err := t.lab.Endpoint(ep)
		if err != nil {
			return nil, nil, err
		}
		if e.Kind != "pod" {
			continue // host-to-host: nodes carry no pod policy
		}
		if isClient[ep] {
			clients = append(clients, ep)
		} else {
			servers = append(servers, ep)
		}
	}
	if len(clients) == 0 || len(servers) == 0 {
		return nil, nil, errors.New("the run's placements have no pod-to-pod or pod-to-service pair (a client pod and a server pod)")
	}
	return clients, servers, nil
}

// policySpec is the NetworkPolicy of a benchmark: each server pod accepts
// every port from the clients only, each client reaches the servers only
// (egress), as a namespace with default-deny and one allow policy per
// direction would. scale dummy rules (policy.ScaleRules: another /32 peer
// and port each) go in front of each server's real rule, so a linear
// chain walks them all before it matches.
func policySpec(l *lab.Lab, clients, servers []string, scale int) (policy.Spec, error) {
	dummies, err := policy.ScaleRules(scale, policy.Port{Protocol: datapath.TCP, Port: scaleRulePort})
	if err != nil {
		return policy.Spec{}, err
	}
	prefixes := func(names []string) ([]netip.Prefix, error) {
		var out []netip.Prefix
		for _, n := range names {
			e, err := l.Endpoint(n)
			if err != nil {
				return nil, err
			}
			a, err := netip.ParseAddr(e.IP)
			if err != nil {
				return nil, fmt.Errorf("policy: %s: %w", n, err)
			}
			out = append(out, netip.PrefixFrom(a, 32))
		}
		return out, nil
	}
	clientPeers, err := prefixes(clients)
	if err != nil {
		return policy.Spec{}, err
	}
	serverPeers, err := prefixes(servers)
	if err != nil {
		return policy.Spec{}, err
	}
	var spec policy.Spec
	add := func(names []string, ingress, egress []policy.Rule) error {
		for _, n := range names {
			e, err := l.Endpoint(n)
			if err != nil {
				return err
			}
			ifc, err := l.HostIface(n)
			if err != nil {
				return err
			}
			spec.Pods = append(spec.Pods, policy.PodPolicy{Pod: n, Node: e.Node, IP: netip.MustParseAddr(e.IP),
				HostIface: ifc, Ingress: ingress, Egress: egress})
		}
		return nil
	}
	if err := add(clients, nil, []policy.Rule{{Peers: serverPeers}}); err != nil {
		return policy.Spec{}, err
	}
	if err := add(servers, append(dummies, policy.Rule{Peers: clientPeers}), nil); err != nil {
		return policy.Spec{}, err
	}
	return spec, spec.Validate()
}

// scaleRulePort is the port of the dummy rules: one no engine uses, so
// they only cost their matching.
const scaleRulePort = 9

// closePolicy removes the enforcers' state from every node.
func (t *Target) closePolicy() error {
	if t.policy == nil {
		return nil
	}
	var errs []error
	for _, e := range t.policy.enforcers {
		errs = append(errs, e.Close())
	}
	t.policy.enforcers = nil
	return errors.Join(errs...)
}

// policyDetails is the policy part of Details: nil without policy.
func (t *Target) policyDetails() *PolicyCheck {
	if t.policy == nil {
		return nil
	}
	return &t.policy.check
}
