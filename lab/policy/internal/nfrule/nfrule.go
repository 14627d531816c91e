// Package nfrule is what the netfilter enforcers (iptables with ipset, nft
// with sets) share about rendering a policy.Rule: its peers reduced to the
// elements a set holds, its ports grouped into one match per protocol, and
// the counts Verify should read back. Kept apart so both render a Spec to
// the same number of rules and elements.
package nfrule

import (
	"cmp"
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cnibench/cnibench/lab/policy"
)

// MaxMultiport is how many ports one iptables multiport match takes.
const MaxMultiport = 15

// Elements is the smallest list of non-overlapping prefixes covering
// peers: masked, those inside another peer dropped (nft interval sets
// refuse overlaps), 0.0.0.0/0 split into two /1 (ipset hash:net refuses
// /0, as Calico splits it). Sorted, so a rendering is stable.
func Elements(peers []netip.Prefix) []netip.Prefix {
	ps := make([]netip.Prefix, 0, len(peers))
	for _, p := range peers {
		ps = append(ps, p.Masked())
	}
	// Shortest first, so a covering prefix is kept before what it covers.
	slices.SortFunc(ps, func(a, b netip.Prefix) int {
		return cmp.Or(cmp.Compare(a.Bits(), b.Bits()), a.Addr().Compare(b.Addr()))
	})
	var out []netip.Prefix
	kept := map[netip.Prefix]bool{}
	for _, p := range ps {
		if !within(p, kept) {
			out = append(out, p)
			kept[p] = true
		}
	}
	if len(out) == 1 && out[0].Bits() == 0 {
		out = []netip.Prefix{netip.MustParsePrefix("0.0.0.0/1"), netip.MustParsePrefix("128.0.0.0/1")}
	}
	slices.SortFunc(out, func(a, b netip.Prefix) int {
		return cmp.Or(a.Addr().Compare(b.Addr()), cmp.Compare(a.Bits(), b.Bits()))
	})
	return out
}

// within reports whether p lies inside one of set (p itself included):
// one lookup per shorter prefix length, so 10,000 peers cost 10,000 × 33
// lookups, not 10,000².
func within(p netip.Prefix, set map[netip.Prefix]bool) bool {
	for b := p.Bits(); b >= 0; b-- {
		if set[netip.PrefixFrom(p.Addr(), b).Masked()] {
			return true
		}
	}
	return false
}

// Covered counts the distinct peers of a rule that the elements read back
// from the kernel cover (a /0 peer needs both halves).
func Covered(peers []netip.Prefix, elems map[netip.Prefix]bool) int {
	n := 0
	seen := map[netip.Prefix]bool{}
	for _, p := range peers {
		p = p.Masked()
		if seen[p] {
			continue
		}
		seen[p] = true
		if p.Bits() == 0 {
			if elems[netip.MustParsePrefix("0.0.0.0/1")] && elems[netip.MustParsePrefix("128.0.0.0/1")] {
				n++
			}
			continue
		}
		if within(p, elems) {
			n++
		}
	}
	return n
}

// Inline returns the one element a rule's peers reduce to, when they
// reduce to one: such a rule matches the prefix in the rule itself (as
// Calico renders a rule's CIDRs) instead of a set of one element, which
// would cost a set per rule (10,000 ipsets take ipset restore 8 s to
// create). A policy-scale step of N one-peer rules thus measures N rules
// walked one by one, and one rule with N peers one set lookup.
func Inline(r policy.Rule) (netip.Prefix, bool) {
	e := Elements(r.Peers)
	if len(e) != 1 {
		return netip.Prefix{}, false
	}
	return e[0], true
}

// Distinct is the number of distinct (masked) peers of a rule: what
// Covered returns when the set holds all of them.
func Distinct(peers []netip.Prefix) int {
	seen := map[netip.Prefix]bool{}
	for _, p := range peers {
		seen[p.Masked()] = true
	}
	return len(seen)
}

// Group is one protocol match of a rule: Proto "" is every protocol (and
// then Ports is empty); empty Ports is every port of Proto.
type Group struct {
	Proto string   // "", "tcp" or "udp"
	Ports []uint16 // sorted, distinct
}

// PortString is the ports as "80,443" ("" for every port).
func (g Group) PortString() string {
	s := make([]string, len(g.Ports))
	for i, p := range g.Ports {
		s[i] = strconv.Itoa(int(p))
	}
	return strings.Join(s, ",")
}

// Groups renders a rule's ports as one match per protocol (a rule
// allowing TCP 80 and UDP 53 is two netfilter rules, as in every CNI).
// maxPorts > 0 splits a protocol's ports into groups of at most that many
// (iptables multiport); 0 keeps them in one group (an nft anonymous set).
func Groups(ports []policy.Port, maxPorts int) []Group {
	if len(ports) == 0 {
		return []Group{{}}
	}
	byProto := map[string][]uint16{}
	all := map[string]bool{}
	for _, p := range ports {
		if p.Protocol == "" {
			return []Group{{}}
		}
		pr := strings.ToLower(string(p.Protocol))
		if p.Port == 0 {
			all[pr] = true
		}
		byProto[pr] = append(byProto[pr], p.Port)
	}
	var out []Group
	for _, pr := range []string{"tcp", "udp"} {
		ps, ok := byProto[pr]
		switch {
		case !ok:
			continue
		case all[pr]:
			out = append(out, Group{Proto: pr})
			continue
		}
		slices.Sort(ps)
		ps = slices.Compact(ps)
		for len(ps) > 0 {
			n := len(ps)
			if maxPorts > 0 && n > maxPorts {
				n = maxPorts
			}
			out = append(out, Group{Proto: pr, Ports: ps[:n:n]})
			ps = ps[n:]
		}
	}
	return out
}

// Dir is a pod's policy direction.
type Dir struct {
	Name  string        // "ingress" or "egress"
	Short string        // "I" or "E", for names with a length limit
	Rules []policy.Rule // nil: direction not selected
	Peer  string        // the peer's side of the packet: "src" for ingress, "dst" for egress
}

// Dirs are the two directions of p, ingress first.
func Dirs(p policy.PodPolicy) [2]Dir {
	return [2]Dir{
		{Name: "ingress", Short: "I", Rules: p.Ingress, Peer: "src"},
		{Name: "egress", Short: "E", Rules: p.Egress, Peer: "dst"},
	}
}

// Selected reports whether the direction is enforced (a non-nil rule list).
func (d Dir) Selected() bool { return d.Rules != nil }

// Totals is what both enforcers expect of a node's spec: pods with a
// selected direction, rules, distinct peers, set elements (of the rules
// not Inline), per-pod
// chains, and netfilter rules in the pod chains (a Group each, plus the
// final drop).
type Totals struct {
	Pods, Rules, Peers, Elements, PodChains, PodChainRules int
}

// Count computes Totals of spec, with maxPorts as in Groups.
func Count(spec policy.Spec, maxPorts int) Totals {
	var t Totals
	for _, p := range spec.Pods {
		sel := false
		for _, d := range Dirs(p) {
			if !d.Selected() {
				continue
			}
			sel = true
			t.PodChains++
			t.PodChainRules++ // the drop
			for _, r := range d.Rules {
				t.Rules++
				t.Peers += Distinct(r.Peers)
				if _, in := Inline(r); !in {
					t.Elements += len(Elements(r.Peers))
				}
				t.PodChainRules += len(Groups(r.Ports, maxPorts))
			}
		}
		if sel {
			t.Pods++
		}
	}
	return t
}

// Describe names a rule in errors: "pod node0-pod1 ingress rule 3".
func Describe(pod string, d Dir, i int) string {
	return fmt.Sprintf("pod %s %s rule %d", pod, d.Name, i)
}

// Stale lists, sorted, what had holds and want does not: the objects a
// Program deletes.
func Stale(had, want map[string]bool) []string {
	var out []string
	for k := range had {
		if !want[k] {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// EachChain calls fn for every selected direction of every pod of spec
// with its chain's name, in spec order, and returns the set of chain
// names; two pods whose names collide (a hash, or a pod listed under two
// names that map alike) are an error naming the pod.
func EachChain(spec policy.Spec, nm Namer, fn func(p policy.PodPolicy, d Dir, chain string) error) (map[string]bool, error) {
	chains := map[string]bool{}
	for _, p := range spec.Pods {
		for _, d := range Dirs(p) {
			if !d.Selected() {
				continue
			}
			ch := nm.Chain(p.Pod, d)
			if chains[ch] {
				return chains, fmt.Errorf("pod %s: chain name %s taken by another pod", p.Pod, ch)
			}
			chains[ch] = true
			if err := fn(p, d, ch); err != nil {
				return chains, err
			}
		}
	}
	return chains, nil
}

// Generate is how a netfilter Program starts: spec checked (the error
// prefixed with the enforcer's name) and cut to node, the kernel read
// again through adopt when drift says the enforcer's idea of it may be
// wrong, then gen builds the batch for the cut spec. generate is the time
// from the start without that re-read, which returns as reread: tool time
// that Program counts as Apply.
func Generate[B any](ctx context.Context, name string, spec policy.Spec, node string, drift bool,
	adopt func(context.Context) error, gen func(policy.Spec) (B, error)) (cut policy.Spec, b B, generate, reread time.Duration, err error) {
	t0 := time.Now()
	if err := spec.Validate(); err != nil {
		return spec, b, 0, 0, fmt.Errorf("policy %s: %w", name, err)
	}
	cut = spec.OnNode(node)
	if drift {
		t := time.Now()
		err := adopt(ctx)
		if reread = time.Since(t); err != nil {
			return cut, b, 0, reread, err
		}
	}
	b, err = gen(cut)
	generate = time.Since(t0) - reread
	if err != nil {
		err = fmt.Errorf("policy %s: %w", name, err)
	}
	return cut, b, generate, reread, err
}

// Judge is how a netfilter Verify ends: first is the first piece of the
// last spec found missing, else the counts read back (got) must equal
// want; the error names the enforcer and the node.
func Judge(name, node string, first error, got, want policy.Counts) error {
	if first == nil && got != want {
		first = fmt.Errorf("kernel holds %+v, want %+v", got, want)
	}
	if first != nil {
		return fmt.Errorf("policy %s: node %s: %w", name, node, first)
	}
	return nil
}
