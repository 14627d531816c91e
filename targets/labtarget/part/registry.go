package part

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/cnibench/cnibench/lab"
)

// Def is a registered kind of part: the names it recognises.
type Def struct {
	// Help is how --help and errors list its names: "policy", "policy-N".
	Help []string
	// Parse returns the part name stands for; ok is false for a name that
	// is not of this kind, err says why one that is cannot be (policy-0).
	Parse func(name string) (p Part, ok bool, err error)
	// Implied, when set, is the part the lab's config switches on without
	// the scenario naming it (--encryption wireguard): nil when it does not.
	Implied func(c lab.Config) Part
}

var defs []Def

// Register adds a kind of part; call it from the part package's init.
func Register(d Def) {
	if len(d.Help) == 0 || d.Parse == nil {
		panic("part.Register: a Def needs Help and Parse")
	}
	defs = append(defs, d)
}

// Names lists the registered parts for --help, sorted.
func Names() []string {
	var n []string
	for _, d := range defs {
		n = append(n, d.Help...)
	}
	sort.Strings(n)
	return slices.Compact(n)
}

// Lookup returns the part a name stands for.
func Lookup(name string) (Part, error) {
	for _, d := range defs {
		p, ok, err := d.Parse(name)
		if err != nil {
			return nil, err
		}
		if ok {
			return p, nil
		}
	}
	return nil, fmt.Errorf("unknown scenario %q (known: %s; combine with +, e.g. vxlan+ebpf)", name, strings.Join(Names(), ", "))
}

// Implied are the parts c switches on that parts do not name (the
// encryption of --encryption), for a run to open beside them.
func Implied(c lab.Config, parts []Part) []Part {
	var out []Part
	for _, d := range defs {
		if d.Implied == nil {
			continue
		}
		if p := d.Implied(c); p != nil && !slices.ContainsFunc(parts, func(q Part) bool { return q.Name() == p.Name() }) {
			out = append(out, p)
		}
	}
	return out
}
