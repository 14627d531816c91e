package tuning

import (
	"context"
	"errors"
	"fmt"
	"os/exec"

	"sigs.k8s.io/knftables"

	"github.com/cnibench/cnibench/internal/netnsx"
)

// notrack exempts pod-to-pod traffic from connection tracking in the
// nodes' namespaces (a raw-priority nft rule, as NOTRACK in iptables'
// raw table): each packet skips conntrack's lookup and insert. It breaks
// what needs conntrack: kube-proxy's Service NAT (the replies would not
// be translated back) and stateful policy, so the lab refuses those
// placements and combinations (labtarget).
type notrack struct{}

func (notrack) Name() string { return "notrack" }
func (notrack) About() string {
	return "pod-to-pod traffic not tracked by conntrack in the nodes (nft raw priority notrack)"
}
func (notrack) NodesOnly() bool { return true }

func (notrack) Applicable() error {
	if _, err := exec.LookPath("nft"); err != nil {
		return fmt.Errorf("%w: nft not found (Debian package nftables)", ErrNotApplicable)
	}
	return nil
}

// notrackComment marks our rules: knftables lists a rule's comment and
// handle, not its text.
const notrackComment = "cnibench notrack"

// notrackTable is the table in a node's namespace.
func notrackTable(s Site) string { return s.Prefix + "notrack" }

// notrackRules is the table's content: a set of the pod ranges and, in
// prerouting (forwarded traffic) and output, a counted notrack for
// packets between them.
func notrackRules(s Site) []knftables.Object {
	objs := []knftables.Object{
		&knftables.Table{},
		&knftables.Set{Name: "pods", Type: "ipv4_addr", Flags: []knftables.SetFlag{knftables.IntervalFlag}},
	}
	for _, p := range s.PodCIDRs {
		objs = append(objs, &knftables.Element{Set: "pods", Key: []string{p.String()}})
	}
	for _, c := range []struct {
		name string
		hook knftables.BaseChainHook
	}{{"prerouting", knftables.PreroutingHook}, {"output", knftables.OutputHook}} {
		objs = append(objs,
			&knftables.Chain{Name: c.name, Type: knftables.PtrTo(knftables.FilterType), Hook: knftables.PtrTo(c.hook),
				Priority: knftables.PtrTo(knftables.RawPriority)},
			&knftables.Rule{Chain: c.name, Rule: "ip saddr @pods ip daddr @pods counter notrack", Comment: knftables.PtrTo(notrackComment)})
	}
	return objs
}

// nftIn is a knftables interface for site's table, its nft run in site's
// namespace.
func nftIn(s Site) (knftables.Interface, error) {
	var nft knftables.Interface
	err := netnsx.Do(s.Netns, func() error {
		var err error
		nft, err = knftables.New(knftables.IPv4Family, notrackTable(s))
		return err
	})
	return nft, err
}

func (n notrack) Apply(ctx context.Context, s Site) (func() error, error) {
	if len(s.PodCIDRs) == 0 {
		return nil, errors.New("no pod ranges to match")
	}
	nft, err := nftIn(s)
	if err != nil {
		return nil, err
	}
	tx := nft.NewTransaction()
	// A table a crashed run left (the lab stayed up) is emptied first, so
	// its rules are not doubled: the table is ours by its prefixed name.
	tx.Add(&knftables.Table{})
	tx.Flush(&knftables.Table{})
	for _, o := range notrackRules(s) {
		tx.Add(o)
	}
	undo := func() error {
		tx := nft.NewTransaction()
		tx.Delete(&knftables.Table{})
		err := netnsx.Do(s.Netns, func() error { return nft.Run(context.Background(), tx) })
		if knftables.IsNotFound(err) {
			return nil
		}
		return err
	}
	if err := netnsx.Do(s.Netns, func() error { return nft.Run(ctx, tx) }); err != nil {
		return undo, fmt.Errorf("nft table %s: %w", notrackTable(s), err)
	}
	return undo, nil
}

func (n notrack) Verify(ctx context.Context, s Site) (string, error) {
	nft, err := nftIn(s)
	if err != nil {
		return "", err
	}
	held := 0
	for _, chain := range []string{"prerouting", "output"} {
		var rules []*knftables.Rule
		err = netnsx.Do(s.Netns, func() error {
			var err error
			rules, err = nft.ListRules(ctx, chain)
			return err
		})
		if err != nil {
			return "", fmt.Errorf("list nft table %s: %w", notrackTable(s), err)
		}
		for _, r := range rules {
			if r.Comment != nil && *r.Comment == notrackComment {
				held++
			}
		}
	}
	if held != 2 {
		return "", fmt.Errorf("nft table %s holds %d notrack rules, want 2 (prerouting, output)", notrackTable(s), held)
	}
	return "notrack rules in prerouting and output", nil
}
