package labtarget

import (
	"fmt"
	"hash/fnv"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/cnibench/cnibench/datapath"
	"github.com/cnibench/cnibench/lab"
	"github.com/cnibench/cnibench/lab/policy"
	"github.com/cnibench/cnibench/lab/tuning"
)

// scenarios are the lab configurations `run --scenarios` knows, each a
// change to the base lab config. Each scenario gets a lab of its own, named
// after it, so all of them stay up while rounds alternate between them.
var scenarios = map[string]func(*lab.Config){
	"native": func(c *lab.Config) { c.Routing = lab.RoutingNative },
	"vxlan":  func(c *lab.Config) { c.Routing = lab.RoutingVXLAN },
	// Pod traffic between nodes encrypted by WireGuard (lab/wireguard);
	// with vxlan, the overlay's packets are.
	"wireguard": func(c *lab.Config) { c.Encryption = lab.EncryptionWireGuard },
	// L3/L4 NetworkPolicy on the run's pods, enforced the way the Service
	// datapath's family does it (policy.go).
	"policy": func(c *lab.Config) { c.Policy = true },
	// HTTP policy through a real proxy: per node on the server's node
	// (Cilium's ingress policy) or on the client's (Cilium's egress
	// policy), or as sidecars (Istio) (l7.go).
	"l7-node":    func(c *lab.Config) { c.L7 = lab.L7PerNode },
	"l7-egress":  func(c *lab.Config) { c.L7 = lab.L7PerNodeEgress },
	"l7-sidecar": func(c *lab.Config) { c.L7 = lab.L7Sidecar },
	// Flow observability on: per-flow events read on every node (flows.go).
	"flows": func(c *lab.Config) { c.Flows = true },
	// The eBPF datapath without its socket LB (Cilium's
	// socketLB.enabled=false): Services translated per packet at tc, which
	// is the ebpf-tc datapath; ScenarioConfig checks it goes with ebpf.
	sockLBOff: func(*lab.Config) {},
	// The same lab as without it; the churn schedule changes its Services
	// during its samples (suite.ChurnPart).
	"churn": func(*lab.Config) {},
}

// sockLBOff is the scenario part that turns ebpf's socket LB off.
const sockLBOff = "socklb-off"

// scenarioTokens shortens scenario parts that are not Service datapaths
// in lab names ("vxlan+iptables-legacy+policy" is lab "vxlaniptlpol").
var scenarioTokens = map[string]string{"policy": "pol", "l7-node": "l7n", "l7-egress": "l7e", "l7-sidecar": "l7s", "flows": "flo", sockLBOff: "nsl", "wireguard": "wg", "churn": "chn"}

func init() {
	for _, d := range datapath.Names() {
		scenarios[d] = func(c *lab.Config) { c.ServiceDatapath = d }
	}
}

// labName shortens a scenario's known parts into a lab name: a Service
// datapath becomes its registered token ("iptables-legacy" → "iptl"),
// "policy" becomes "pol", the "+" between parts goes; a name still over
// the 12 characters allowed keeps 8 and adds 4 hex digits of a hash.
func labName(parts []string) string {
	var b strings.Builder
	for _, p := range parts {
		if v, ok := datapath.Lookup(p); ok {
			p = v.Short
		} else if tok, ok := scenarioTokens[p]; ok {
			p = tok
		} else if tok, ok := policyToken(p); ok {
			p = tok
		} else if tok, ok := tuningToken(p); ok {
			p = tok
		}
		b.WriteString(p)
	}
	return FitLabName(b.String(), strings.Join(parts, "+"))
}

// FitLabName returns name when it fits the 12 characters a lab name
// allows, else its first 8 and 4 hex digits of a hash of whole (what the
// name stands for, e.g. the scenario "vxlan+ebpf-tc+policy"): readable,
// and still unique.
func FitLabName(name, whole string) string {
	if len(name) <= 12 {
		return name
	}
	h := fnv.New32a()
	h.Write([]byte(whole))
	return fmt.Sprintf("%s%04x", name[:8], h.Sum32()&0xffff)
}

// ScenarioNames lists the known scenarios (policy-N stands for every
// policy-scale part).
func ScenarioNames() []string {
	n := append([]string{"policy-N"}, tuning.Names()...)
	for k := range scenarios {
		n = append(n, k)
	}
	sort.Strings(n)
	return n
}

// ScenarioConfig returns the lab config of a named scenario on top of base.
// Names combine with "+": "vxlan+ebpf" is a VXLAN lab with the eBPF
// Service datapath.
func ScenarioConfig(name string, base lab.Config) (lab.Config, error) {
	name = strings.ToLower(strings.TrimSpace(name))
	cfg := base
	parts := strings.Split(name, "+")
	if err := conflicting(parts); err != nil {
		return base, fmt.Errorf("scenario %q: %w", name, err)
	}
	for _, part := range parts {
		apply, ok := scenarios[part]
		if n, isScale, err := policyScalePart(part); isScale {
			if err != nil {
				return base, fmt.Errorf("scenario %q: %w", name, err)
			}
			apply, ok = func(c *lab.Config) { c.Policy, c.PolicyRules = true, n }, true
		}
		if k, isTuning := tuning.Lookup(part); isTuning && !ok {
			apply, ok = func(c *lab.Config) { c.Tuning = append(slices.Clone(c.Tuning), k.Name()) }, true
		}
		if !ok {
			return base, fmt.Errorf("unknown scenario %q (known: %s; combine with +, e.g. vxlan+ebpf)", part, strings.Join(ScenarioNames(), ", "))
		}
		apply(&cfg)
	}
	if slices.Contains(parts, sockLBOff) {
		if cfg.ServiceDatapath != "ebpf" {
			return base, fmt.Errorf("scenario %q: %s turns off the ebpf datapath's socket LB and goes with ebpf only (e.g. ebpf+%s)", name, sockLBOff, sockLBOff)
		}
		cfg.ServiceDatapath = "ebpf-tc" // the same eBPF datapath translating per packet at tc
	}
	// The scenario's lab is named after it, in the 12 characters [a-z0-9]
	// a lab name allows.
	cfg.Name = labName(parts)
	if err := configConflicts(cfg); err != nil {
		return base, fmt.Errorf("scenario %q: %w", name, err)
	}
	if err := cfg.Validate(); err != nil {
		return cfg, fmt.Errorf("scenario %q: %w", name, err)
	}
	return cfg, nil
}

// conflicting says why scenario parts cannot go together: two L7 models
// (one would silently win), or L3/L4 policy with the per-node proxy, which
// connects to the servers from its node's address, a peer the benchmark's
// policy does not allow (a CNI allows its own proxy; this lab does not
// model that yet).
func conflicting(parts []string) error {
	has := func(p string) bool { return slices.Contains(parts, p) }
	switch {
	case countL7(parts) > 1:
		return fmt.Errorf("l7-node, l7-egress and l7-sidecar are L7 models: choose one")
	case has("policy") && slices.ContainsFunc(parts, func(p string) bool { _, ok, _ := policyScalePart(p); return ok }):
		return fmt.Errorf("policy and policy-N are the same feature: choose one")
	case (has("policy") || slices.ContainsFunc(parts, func(p string) bool { _, ok, _ := policyScalePart(p); return ok })) && (has("l7-node") || has("l7-egress")):
		return fmt.Errorf("policy with l7-node or l7-egress is not supported: the per-node proxy connects from its node's address, which the policy denies (l7-sidecar works with policy)")
	}
	return nil
}

// countL7 is how many L7 models parts name.
func countL7(parts []string) int {
	n := 0
	for _, p := range []string{"l7-node", "l7-egress", "l7-sidecar"} {
		if slices.Contains(parts, p) {
			n++
		}
	}
	return n
}

// configConflicts says why a scenario's finished config (its parts on top
// of the run's flags) cannot be measured: notrack where conntrack is
// needed (the per-node proxies' DNAT; a netfilter enforcer's
// "established" rule and NFLOG flow recorder, which log and accept by
// conntrack state; the eBPF enforcer and recorder keep their own), or an
// MTU tuning on an encrypted lab, whose WireGuard devices keep the MTU
// the lab was built with.
func configConflicts(c lab.Config) error {
	has := func(t string) bool { return slices.Contains(c.Tuning, t) }
	netfilter := true
	if v, ok := datapath.Lookup(c.ServiceDatapath); ok {
		netfilter = v.Netfilter
	}
	switch {
	case has("notrack") && (c.L7 == lab.L7PerNode || c.L7 == lab.L7PerNodeEgress):
		return fmt.Errorf("notrack with l7-node or l7-egress is not supported: the per-node proxy's DNAT needs conntrack in the node")
	case has("notrack") && c.Policy && netfilter:
		return fmt.Errorf("notrack with policy on a netfilter datapath is not supported: the enforcer accepts replies by conntrack state (an eBPF datapath's enforcer keeps its own)")
	case has("notrack") && c.Flows && netfilter:
		return fmt.Errorf("notrack with flows on a netfilter datapath is not supported: NFLOG records a flow's first packet by conntrack state, which untracked packets never get (an eBPF datapath's ring buffer does not need it)")
	case c.Encryption != "" && slices.ContainsFunc(c.Tuning, func(t string) bool { return strings.HasPrefix(t, "mtu-") }):
		return fmt.Errorf("mtu-N with %s is not supported: the WireGuard devices keep the MTU the lab was built with", c.Encryption)
	}
	return nil
}

// tuningToken is a tuning part's lab-name token: "cc-bbr" is "bbr",
// "mtu-9000" "m9000",
// "gro-on" "gro", "gro-off" "ngro", "notrack" "ntr", "busy-poll" "bpol".
func tuningToken(part string) (string, bool) {
	if _, ok := tuning.Lookup(part); !ok {
		return "", false
	}
	if algo, ok := strings.CutPrefix(part, "cc-"); ok {
		return algo, true
	}
	if n, ok := strings.CutPrefix(part, "mtu-"); ok {
		return "m" + n, true
	}
	return map[string]string{"gro-on": "gro", "gro-off": "ngro", "gso-on": "gso", "gso-off": "ngso", "notrack": "ntr", "busy-poll": "bpol", "node-rps": "rps"}[part], true
}

// policyScalePart parses a policy-scale part, "policy-N" or "policy-Nk"
// (policy with N dummy rules per server pod in front of the real one, as
// N NetworkPolicy rules would be): isScale says the part has that form.
func policyScalePart(part string) (n int, isScale bool, err error) {
	num, ok := strings.CutPrefix(part, "policy-")
	if !ok {
		return 0, false, nil
	}
	mult := 1
	if v, k := strings.CutSuffix(num, "k"); k {
		num, mult = v, 1000
	}
	v, err := strconv.Atoi(num)
	if err != nil || v < 1 || v*mult > policy.MaxScalePeers {
		return 0, true, fmt.Errorf("%q: want policy-N with N rules per pod in 1..%d (e.g. policy-1000 or policy-10k)", part, policy.MaxScalePeers)
	}
	return v * mult, true, nil
}

// policyToken is a policy-scale part's lab-name token: "p1000", "p10k".
func policyToken(part string) (string, bool) {
	n, ok, err := policyScalePart(part)
	if !ok || err != nil {
		return "", false
	}
	if n%1000 == 0 {
		return fmt.Sprintf("p%dk", n/1000), true
	}
	return fmt.Sprintf("p%d", n), true
}
