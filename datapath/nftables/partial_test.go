package nftables

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/datapath"
	"github.com/cnibench/cnibench/internal/nsexec"
	"github.com/cnibench/cnibench/lab/labtest"
)

// A sync after a sync (kube-proxy's partial sync) rewrites the chains of
// new or changed Services only: an unchanged Service's chain keeps its
// rules (same kernel handles), a changed one gets new rules, and the
// kernel holds exactly the spec each time.
func TestPartialSyncKeepsUnchangedChains(t *testing.T) {
	ns := labtest.ScratchNS(t, "nfp")
	d := newOrSkip(t, ns, layouts[0].opts)
	ctx := context.Background()
	base := datapath.DummyServices(20, 3)
	first, err := d.Program(ctx, datapath.Spec{Services: base})
	if err != nil {
		t.Fatal(err)
	}
	kept, changed := serviceChain(&base[0]), serviceChain(&base[1])
	keptBefore, changedBefore := ruleHandles(t, ns, kept), ruleHandles(t, ns, changed)

	grown := labtest.PartialSync(t, d, first)
	if got := ruleHandles(t, ns, kept); got != keptBefore {
		t.Errorf("unchanged Service's chain was rewritten: handles %s, then %s", keptBefore, got)
	}
	if got := ruleHandles(t, ns, changed); got == changedBefore {
		t.Errorf("Service with a changed endpoint kept its old rules (handles %s)", got)
	}
	// Shrinking removes what is gone, also from the maps.
	labtest.Sync(t, d, datapath.Spec{Services: grown[:10]}, "after shrinking")
}

// ruleHandles lists the kernel handles of a chain's rules.
func ruleHandles(t *testing.T, ns, chain string) string {
	t.Helper()
	out, err := nsexec.Run(context.Background(), ns, nil, "nft", "-a", "list", "chain", "ip", table, chain)
	if err != nil {
		t.Fatal(err)
	}
	hs := regexp.MustCompile(`# handle (\d+)`).FindAllString(string(out), -1)
	if len(hs) == 0 {
		t.Fatalf("chain %s has no rules:\n%s", chain, out)
	}
	return strings.Join(hs, ",")
}
