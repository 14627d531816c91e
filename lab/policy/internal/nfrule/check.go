package nfrule

import (
	"fmt"
	"net/netip"
	"sort"

	"github.com/cnibench/cnibench/lab/policy"
)

// View is what an enforcer read back from the kernel, reduced to what
// Check compares: the dispatch from the base chain to pod chains, each
// pod chain's allow rules by Key, and each set's elements.
type View struct {
	Chains   map[string]bool                  // pod chains of ours
	Dispatch map[string]bool                  // DispatchKey of each dispatch rule
	Allow    map[string]map[string]string     // pod chain -> Key -> the rule's text, for errors
	Sets     map[string]map[netip.Prefix]bool // set -> elements
}

// NewView is an empty View.
func NewView() View {
	return View{Chains: map[string]bool{}, Dispatch: map[string]bool{}, Allow: map[string]map[string]string{},
		Sets: map[string]map[netip.Prefix]bool{}}
}

// AddAllow records an allow rule of chain.
func (v View) AddAllow(chain, key, text string) {
	if v.Allow[chain] == nil {
		v.Allow[chain] = map[string]string{}
	}
	v.Allow[chain][key] = text
}

// Key identifies an allow rule by what it matches: peers (a set name or
// an inline prefix in netip's form), side ("src" or "dst"), the Group's
// protocol and ports; built the same from a Group and from a listing.
func Key(peers, side, proto, ports string) string {
	return peers + " " + side + " " + proto + " " + ports
}

// DispatchKey identifies the base chain's jump to a pod chain: by output
// interface for ingress, input interface for egress.
func DispatchKey(d Dir, iface, chain string) string { return d.Name + " " + iface + " " + chain }

// Namer names a pod's chains and a rule's set as the enforcer does.
type Namer interface {
	Chain(pod string, d Dir) string
	Set(pod string, d Dir, rule int) string
}

// Check counts into c the pods, rules and peers of spec found in v: a pod
// when its chains exist and are dispatched to, a rule when every Group of
// it is in its chain (and an allow rule no rule of spec explains counts
// too, so extra rules show), a peer when its rule's set (or the inline
// rule) covers it. It returns the first piece missing, named.
func Check(spec policy.Spec, v View, nm Namer, maxPorts int, c *policy.Counts) error {
	var first error
	miss := func(format string, a ...any) {
		if first == nil {
			first = fmt.Errorf(format, a...)
		}
	}
	explained := map[string]bool{}
	for _, p := range spec.Pods {
		podOK, sel := true, false
		for _, d := range Dirs(p) {
			if !d.Selected() {
				continue
			}
			sel = true
			ch := nm.Chain(p.Pod, d)
			if !v.Chains[ch] || !v.Dispatch[DispatchKey(d, p.HostIface, ch)] {
				podOK = false
				miss("pod %s %s: chain %s missing or not dispatched to", p.Pod, d.Name, ch)
			}
			for i, r := range d.Rules {
				set := nm.Set(p.Pod, d, i)
				inline, isInline := Inline(r)
				match := set
				if isInline {
					match = inline.String()
				}
				ok := true
				for _, g := range Groups(r.Ports, maxPorts) {
					k := Key(match, d.Peer, g.Proto, g.PortString())
					explained[ch+" "+k] = true
					_, have := v.Allow[ch][k]
					ok = ok && have
				}
				if ok {
					c.Rules++
				} else {
					miss("%s: rule matching %s missing from chain %s", Describe(p.Pod, d, i), match, ch)
				}
				if isInline {
					if ok {
						c.Peers += Distinct(r.Peers)
					}
					continue
				}
				got := Covered(r.Peers, v.Sets[set])
				c.Peers += got
				if want := Distinct(r.Peers); got != want {
					miss("%s: set %s covers %d of %d peers", Describe(p.Pod, d, i), set, got, want)
				}
			}
		}
		if sel && podOK {
			c.Pods++
		}
	}
	chains := make([]string, 0, len(v.Allow))
	for ch := range v.Allow {
		chains = append(chains, ch)
	}
	sort.Strings(chains)
	for _, ch := range chains {
		for k, text := range v.Allow[ch] {
			if !explained[ch+" "+k] {
				c.Rules++
				miss("chain %s holds an allow rule no policy rule explains: %s", ch, text)
			}
		}
	}
	return first
}
