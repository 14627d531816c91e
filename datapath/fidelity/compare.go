package fidelity

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/cnibench/cnibench/datapath"
)

// Report is what Compare found.
type Report struct {
	// Services is how many Service ports were compared.
	Services int
	// ServiceDiffs describes every Service port whose walk differs; each
	// entry names the Service and the first differing line on each side.
	ServiceDiffs []string
	// CommentOnly names the Service ports whose walks differ only in
	// iptables comments ("-m comment --comment ..."), which match every
	// packet: kube-proxy drops its per-endpoint comments above 1,000
	// endpoints, but its partial syncs leave the chains of Services that
	// did not change as they were written, so on a node that grew past
	// the threshold older Services keep theirs while the lab, writing
	// every chain, has none.
	CommentOnly []string
	// Layout lists the differences in the shared part of the layout, one
	// line each: "only on lab: CHAIN", "only on node: CHAIN", or
	// "CHAIN differs: lab [...] node [...]", and the same for nftables
	// sets and maps ("set NAME").
	Layout []string
}

// Compare walks every Service of svcs on the lab and on the node, and
// compares the shared part of both layouts. Per-Service chains are left
// out of the layout comparison (the node holds Services of its own, such
// as the API server's), as are the dispatch rules and elements that
// belong to a Service: those were compared in the walks.
func Compare(lab, node *Dump, svcs []datapath.Service) (*Report, error) {
	if lab.Layout != node.Layout {
		return nil, fmt.Errorf("comparing a %s dump with a %s dump", lab.Layout, node.Layout)
	}
	r := &Report{Services: len(svcs)}
	for _, s := range svcs {
		lw, lerr := lab.Walk(s)
		nw, nerr := node.Walk(s)
		switch {
		case lerr != nil || nerr != nil:
			r.ServiceDiffs = append(r.ServiceDiffs, fmt.Sprintf("%s: lab: %v; node: %v", s.Key(), lerr, nerr))
		default:
			if d := firstDiff(lw, nw); d == "" {
				break
			} else if firstDiff(uncommented(lw), uncommented(nw)) == "" {
				r.CommentOnly = append(r.CommentOnly, s.Key())
			} else {
				r.ServiceDiffs = append(r.ServiceDiffs, s.Key()+": "+d)
			}
		}
	}
	ls, ns := lab.shared(), node.shared()
	for _, c := range sortedKeys(union(ls, ns)) {
		l, lok := ls[c]
		n, nok := ns[c]
		switch {
		case !nok:
			r.Layout = append(r.Layout, "only on lab: "+c)
		case !lok:
			r.Layout = append(r.Layout, "only on node: "+c)
		default:
			if d := firstDiff(l, n); d != "" {
				r.Layout = append(r.Layout, c+" differs: "+d)
			}
		}
	}
	return r, nil
}

// shared returns the layout without what belongs to single Services:
// chains by name (sets and maps as "set NAME" with no elements), with
// the rules that dispatch to a per-Service chain removed.
func (d *Dump) shared() map[string][]string {
	out := map[string][]string{}
	for c, rules := range d.Chains {
		if d.perService(c) {
			continue
		}
		kept := []string{}
		for _, r := range rules {
			if !d.dispatches(r) {
				kept = append(kept, r)
			}
		}
		out[c] = kept
	}
	for s := range d.Elements {
		out["set "+s] = nil
	}
	return out
}

// dispatches reports whether rule sends to a per-Service chain.
func (d *Dump) dispatches(rule string) bool {
	for _, t := range targets(d.Layout, rule) {
		if d.perService(t) {
			return true
		}
	}
	return false
}

// firstDiff describes the first line where a and b differ, "" if equal.
func firstDiff(a, b []string) string {
	for i := 0; i < len(a) || i < len(b); i++ {
		var x, y string
		if i < len(a) {
			x = a[i]
		}
		if i < len(b) {
			y = b[i]
		}
		if x != y {
			return fmt.Sprintf("line %d: lab %q, node %q (lab %d lines, node %d)", i+1, x, y, len(a), len(b))
		}
	}
	return ""
}

func union(a, b map[string][]string) map[string]bool {
	u := make(map[string]bool, len(a)+len(b))
	for k := range a {
		u[k] = true
	}
	for k := range b {
		u[k] = true
	}
	return u
}

// commentRE is an iptables comment match as iptables-save prints it.
var commentRE = regexp.MustCompile(` -m comment --comment ("[^"]*"|\S+)`)

// uncommented is walk with the iptables comment matches taken out.
func uncommented(walk []string) []string {
	out := make([]string, len(walk))
	for i, l := range walk {
		out[i] = commentRE.ReplaceAllString(l, "")
	}
	return out
}

// String renders the report for a test log.
func (r *Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d Service ports compared, %d differ, %d in comments only\n", r.Services, len(r.ServiceDiffs), len(r.CommentOnly))
	for _, d := range r.ServiceDiffs {
		b.WriteString("  " + d + "\n")
	}
	fmt.Fprintf(&b, "%d layout differences\n", len(r.Layout))
	for _, d := range r.Layout {
		b.WriteString("  " + d + "\n")
	}
	return b.String()
}
