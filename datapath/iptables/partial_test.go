package iptables

import (
	"context"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/datapath"
	"github.com/cnibench/cnibench/internal/nsexec"
	"github.com/cnibench/cnibench/lab/labtest"
)

// With partial syncs on, a sync after a sync (kube-proxy's
// MinimizeIPTablesRestore) writes the chains of new or changed Services
// only, the kernel holds exactly the spec each time, and a Verify that
// finds the kernel changed behind our back makes the next sync full.
func TestPartialSyncWritesChangedServicesOnly(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			ns := labtest.ScratchNS(t, "ipp")
			d := newOrSkip(t, ns, b.opts)
			d.SetPartialSyncs(true)
			ctx := context.Background()
			base := datapath.DummyServices(20, 3)
			first, err := d.Program(ctx, datapath.Spec{Services: base})
			if err != nil {
				t.Fatal(err)
			}
			grown := labtest.PartialSync(t, d, first)
			// Shrinking removes what is gone.
			labtest.Sync(t, d, datapath.Spec{Services: grown[:10]}, "after shrinking")

			// A chain flushed behind our back: Verify says so, and the
			// next sync rewrites every chain.
			if _, err := nsexec.Run(ctx, ns, nil, b.tool, "-t", "nat", "-F", svcChain(&grown[2])); err != nil {
				t.Fatal(err)
			}
			if _, err := d.Verify(ctx); err == nil {
				t.Fatal("Verify after a chain was flushed: no error")
			}
			labtest.Sync(t, d, datapath.Spec{Services: grown[:10]}, "after a full resync")
		})
	}
}

// A partial batch declares (and so flushes and rewrites) the chains of new
// and changed Services only, and still dispatches every Service from
// KUBE-SERVICES, which it rewrites in full.
func TestPartialBatchLeavesUnchangedChainsOut(t *testing.T) {
	base := datapath.DummyServices(3, 2)
	full, err := generate(&datapath.Spec{Services: base}, genParams{mark: masqMark, held: map[string]string{}})
	if err != nil {
		t.Fatal(err)
	}
	changed := datapath.DummyServices(3, 2)
	changed[1].Endpoints[0].Port = 9999
	b, err := generate(&datapath.Spec{Services: changed}, genParams{mark: masqMark, prev: full.active, held: full.wrote})
	if err != nil {
		t.Fatal(err)
	}
	text := string(b.text)
	for i, s := range changed {
		declared := strings.Contains(text, ":"+svcChain(&s)+" ")
		if declared != (i == 1) {
			t.Errorf("%s declared %v, want %v:\n%s", s.Key(), declared, i == 1, text)
		}
		if !strings.Contains(text, "-d "+s.VIP.String()+" --dport 80 -j "+svcChain(&s)) {
			t.Errorf("%s is not dispatched from KUBE-SERVICES:\n%s", s.Key(), text)
		}
	}
	// The old endpoint's chain is deleted, the kept ones are not.
	if n := strings.Count(text, "\n-X "); n != 1 {
		t.Errorf("partial batch deletes %d chains, want 1 (the changed endpoint's):\n%s", n, text)
	}
	// Large cluster mode changing rewrites everything.
	b2, _ := generate(&datapath.Spec{Services: changed}, genParams{mark: masqMark, prev: b.active, held: b.wrote, heldLarge: true})
	if n := strings.Count(string(b2.text), ":KUBE-SVC-"); n != 3 {
		t.Errorf("after a change of large cluster mode, %d KUBE-SVC chains declared, want 3", n)
	}
}

// Partial syncs turned on after a full sync: the next sync is already
// partial (the churn's first window must not pay for a full sync).
func TestPartialAfterFullSync(t *testing.T) {
	ns := labtest.ScratchNS(t, "ipf")
	d := newOrSkip(t, ns, backends[0].opts)
	ctx := context.Background()
	base := datapath.DummyServices(30, 3)
	full, err := d.Program(ctx, datapath.Spec{Services: base})
	if err != nil {
		t.Fatal(err)
	}
	d.SetPartialSyncs(true)
	base[3].Endpoints = base[3].Endpoints[:2]
	st, err := d.Program(ctx, datapath.Spec{Services: base})
	if err != nil {
		t.Fatal(err)
	}
	if st.Bytes*2 > full.Bytes {
		t.Errorf("first sync after partial syncs were turned on sent %d bytes, the full sync %d: it was a full one", st.Bytes, full.Bytes)
	}
	labtest.Sync(t, d, datapath.Spec{Services: base}, "after the partial sync")
}
