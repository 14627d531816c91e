package nftables

import (
	"crypto/sha256"
	"encoding/base32"
	"fmt"
	"regexp"
	"strings"

	"sigs.k8s.io/knftables"

	"github.com/cnibench/cnibench/lab/policy"
	"github.com/cnibench/cnibench/lab/policy/internal/nfrule"
)

// namer names our objects: "<ingress|egress>-<pod>" chains and
// "<chain>-<rule>" sets, with a hash for a pod name nft would not take
// as a bare identifier.
type namer struct{}

var identRe = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9_-]{0,200}$`)

func (namer) Chain(pod string, d nfrule.Dir) string {
	if !identRe.MatchString(pod) {
		sum := sha256.Sum256([]byte(pod))
		pod = "h" + strings.ToLower(base32.StdEncoding.EncodeToString(sum[:])[:16])
	}
	return d.Name + "-" + pod
}

func (n namer) Set(pod string, d nfrule.Dir, rule int) string {
	return fmt.Sprintf("%s-%d", n.Chain(pod, d), rule)
}

// transaction adds to tx the whole table for spec, given the chains and
// sets the kernel holds (prev): the base chain rewritten (established
// flows accepted, one jump per selected pod direction), each pod chain
// and set flushed and refilled, and what prev has beyond spec deleted
// after the flushes that drop references to it. It returns the objects
// the table holds after tx.
func transaction(tx *knftables.Transaction, spec policy.Spec, prev objects) (*knftables.Transaction, objects, error) {
	now := objects{chains: map[string]bool{}, sets: map[string]bool{}}
	var nm namer
	tx.Add(&knftables.Table{})
	tx.Add(&knftables.Counter{Name: drops})
	addBase(tx)
	tx.Flush(&knftables.Chain{Name: baseChain})
	tx.Add(&knftables.Rule{Chain: baseChain, Rule: "ct state established,related accept"})
	var err error
	now.chains, err = nfrule.EachChain(spec, nm, func(p policy.PodPolicy, d nfrule.Dir, ch string) error {
		tx.Add(&knftables.Chain{Name: ch})
		tx.Flush(&knftables.Chain{Name: ch})
		iface := "oifname"
		if d.Peer == "dst" {
			iface = "iifname"
		}
		tx.Add(&knftables.Rule{Chain: baseChain, Rule: fmt.Sprintf("%s %q jump %s", iface, p.HostIface, ch)})
		for i, r := range d.Rules {
			match := peerMatch(tx, nm.Set(p.Pod, d, i), d.Peer, r, prev, now)
			for _, g := range nfrule.Groups(r.Ports, 0) {
				tx.Add(&knftables.Rule{Chain: ch, Rule: match + portMatch(g) + "return"})
			}
		}
		tx.Add(&knftables.Rule{Chain: ch, Rule: fmt.Sprintf("counter name %q drop", drops)})
		return nil
	})
	if err != nil {
		return tx, now, err
	}
	for _, c := range nfrule.Stale(prev.chains, now.chains) {
		tx.Flush(&knftables.Chain{Name: c})
		tx.Delete(&knftables.Chain{Name: c})
	}
	for _, s := range nfrule.Stale(prev.sets, now.sets) {
		tx.Delete(&knftables.Set{Name: s})
	}
	return tx, now, nil
}

// peerMatch is "ip saddr|daddr <prefix> " for a rule whose peers reduce
// to one (nfrule.Inline), else "... @<set> " with the set made in tx. A
// set prev has is deleted and made again rather than flushed: nft 1.0.6
// checks each element added after a flush of an interval set against the
// whole set (10,000 peers: 1.6 s instead of 0.25 s). The delete is legal
// here because the pod chain, the set's only user, was flushed earlier in
// the same transaction.
func peerMatch(tx *knftables.Transaction, set, side string, r policy.Rule, prev, now objects) string {
	field := "ip saddr "
	if side == "dst" {
		field = "ip daddr "
	}
	if e, ok := nfrule.Inline(r); ok {
		return field + e.String() + " "
	}
	now.sets[set] = true
	if prev.sets[set] {
		tx.Delete(&knftables.Set{Name: set})
	}
	tx.Add(&knftables.Set{Name: set, Type: "ipv4_addr", Flags: []knftables.SetFlag{knftables.IntervalFlag}})
	for _, e := range nfrule.Elements(r.Peers) {
		tx.Add(&knftables.Element{Set: set, Key: []string{e.String()}})
	}
	return field + "@" + set + " "
}

// portMatch is a Group's match: nothing, "meta l4proto tcp ", "tcp dport
// 80 " or "tcp dport { 80, 443 } ".
func portMatch(g nfrule.Group) string {
	switch len(g.Ports) {
	case 0:
		if g.Proto == "" {
			return ""
		}
		return "meta l4proto " + g.Proto + " "
	case 1:
		return g.Proto + " dport " + g.PortString() + " "
	}
	return g.Proto + " dport { " + strings.ReplaceAll(g.PortString(), ",", ", ") + " } "
}
