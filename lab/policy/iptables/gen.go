package iptables

import (
	"bytes"
	"fmt"
	"net/netip"
	"strings"

	"github.com/cnibench/cnibench/lab/policy"
	"github.com/cnibench/cnibench/lab/policy/internal/nfrule"
)

// maxElem is every set's maxelem (ipset's default); a rule with more
// distinct peers is refused.
const maxElem = 65536

// kernelState is what of ours the kernel holds before a Program: Program
// creates only what is missing and deletes what the new spec drops.
type kernelState struct {
	chains  map[string]bool // pod chains
	sets    map[string]bool
	haveFwd bool // the FWD chain and FORWARD's jump to it
	haveDrp bool // the DROP chain with its counted rule
}

// batch is one Program's work: the ipset restore run before the rules
// (sets created, filled), the iptables-restore text, and the ipset restore
// run after it (sets no rule references any more, destroyed).
type batch struct {
	sets, rules, destroy []byte
	chains, setNames     map[string]bool
}

// generate renders the node's spec: FORWARD -> FWD, which accepts
// established flows then sends packets leaving to a pod (-o its host
// interface) to the pod's ingress chain and packets from a pod (-i) to its
// egress chain. A pod chain RETURNs what a rule allows (so the other
// direction's chain, and the rest of FORWARD, still see the packet) and
// ends in a jump to DROP, whose one rule counts and drops.
func generate(spec policy.Spec, n names, st kernelState) (batch, error) {
	b := batch{chains: map[string]bool{}, setNames: map[string]bool{}}
	var sets, fwd, body bytes.Buffer
	var err error
	b.chains, err = nfrule.EachChain(spec, n, func(p policy.PodPolicy, d nfrule.Dir, ch string) error {
		flag := "-o"
		if d.Peer == "dst" {
			flag = "-i"
		}
		fmt.Fprintf(&fwd, "-A %s %s %s -j %s\n", n.fwd(), flag, p.HostIface, ch)
		for i, r := range d.Rules {
			match, err := b.peerMatch(&sets, n.Set(p.Pod, d, i), d.Peer, r, st)
			if err != nil {
				return fmt.Errorf("%s: %w", nfrule.Describe(p.Pod, d, i), err)
			}
			for _, g := range nfrule.Groups(r.Ports, nfrule.MaxMultiport) {
				fmt.Fprintf(&body, "-A %s %s\n", ch, ruleArgs(match, g))
			}
		}
		fmt.Fprintf(&body, "-A %s -j %s\n", ch, n.drop())
		return nil
	})
	if err != nil {
		return b, err
	}
	var t bytes.Buffer
	t.WriteString("*filter\n")
	fmt.Fprintf(&t, ":%s - [0:0]\n", n.fwd())
	if !st.haveDrp {
		fmt.Fprintf(&t, ":%s - [0:0]\n", n.drop())
	}
	stale := nfrule.Stale(st.chains, b.chains)
	for _, c := range append(sorted(b.chains), stale...) {
		fmt.Fprintf(&t, ":%s - [0:0]\n", c) // declares or flushes
	}
	if !st.haveFwd {
		fmt.Fprintf(&t, "-I FORWARD 1 -j %s\n", n.fwd())
	}
	if !st.haveDrp {
		fmt.Fprintf(&t, "-A %s -j DROP\n", n.drop())
	}
	fmt.Fprintf(&t, "-A %s -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT\n", n.fwd())
	t.Write(fwd.Bytes())
	t.Write(body.Bytes())
	for _, c := range stale {
		fmt.Fprintf(&t, "-X %s\n", c)
	}
	t.WriteString("COMMIT\n")
	b.rules = t.Bytes()
	b.sets = sets.Bytes()
	var del bytes.Buffer
	for _, s := range nfrule.Stale(st.sets, b.setNames) {
		fmt.Fprintf(&del, "destroy %s\n", s)
	}
	b.destroy = del.Bytes()
	return b, nil
}

// peerMatch is the match of a rule's peers: "-s/-d <prefix>" when they
// reduce to one (nfrule.Inline), else the set's, whose restore lines it
// writes to sets.
func (b *batch) peerMatch(sets *bytes.Buffer, set, peer string, r policy.Rule, st kernelState) ([]string, error) {
	if e, ok := nfrule.Inline(r); ok {
		flag := "-s"
		if peer == "dst" {
			flag = "-d"
		}
		return []string{flag, e.String()}, nil
	}
	if b.setNames[set] {
		return nil, fmt.Errorf("set name %s taken by another pod (hash collision)", set)
	}
	b.setNames[set] = true
	if err := writeSet(sets, set, nfrule.Elements(r.Peers), st.sets[set]); err != nil {
		return nil, err
	}
	return []string{"-m", "set", "--match-set", set, peer}, nil
}

// ruleArgs is one allow rule, written as iptables-save prints it back.
func ruleArgs(match []string, g nfrule.Group) string {
	w := append([]string{}, match...)
	if g.Proto != "" {
		w = append(w, "-p", g.Proto)
	}
	switch len(g.Ports) {
	case 0:
	case 1:
		w = append(w, "-m", g.Proto, "--dport", g.PortString())
	default:
		w = append(w, "-m", "multiport", "--dports", g.PortString())
	}
	return strings.Join(append(w, "-j", "RETURN"), " ")
}

// writeSet writes the ipset restore lines making set hold exactly elems:
// created if new (hashsize for its size, so 10,000 sets of one element
// stay small), flushed if it exists.
func writeSet(w *bytes.Buffer, set string, elems []netip.Prefix, exists bool) error {
	if len(elems) > maxElem {
		return fmt.Errorf("%d distinct peers, more than a set holds (%d)", len(elems), maxElem)
	}
	if exists {
		fmt.Fprintf(w, "flush %s\n", set)
	} else {
		hs := 64
		for hs < len(elems) && hs < maxElem {
			hs *= 2
		}
		fmt.Fprintf(w, "create %s hash:net family inet hashsize %d maxelem %d\n", set, hs, maxElem)
	}
	for _, e := range elems {
		fmt.Fprintf(w, "add %s %s\n", set, e)
	}
	return nil
}

func sorted(m map[string]bool) []string { return nfrule.Stale(m, nil) }
