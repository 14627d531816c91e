package ebpf

import (
	"context"
	"errors"
	"os"
	"testing"

	cebpf "github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"

	"github.com/cnibench/cnibench/datapath"
)

// TestPreflightRefusesUndersizedMaps: a spec larger than the maps is
// refused with a CapacityError naming the map, what it holds and what is
// needed, by Preflight and by Program (which leaves the maps untouched).
func TestPreflightRefusesUndersizedMaps(t *testing.T) {
	s := newSocketLB(t, Options{LBMapMax: 1000, FlowMapMax: 100, ExpectedFlows: 50})
	ctx := context.Background()
	cases := []struct {
		spec datapath.Spec
		opts Options
		want string
	}{
		{dummySpec(300, 4), s.opts, "ebpf: backend map holds 1000 entries, spec (endpoints of 300 services) needs 1200; use --auto-size or a larger --bpf-map-max"},
		{dummySpec(1001, 0), s.opts, "ebpf: service map holds 1000 entries, spec needs 1001; use --auto-size or a larger --bpf-map-max"},
	}
	for _, c := range cases {
		err := s.Preflight(c.spec)
		var ce *CapacityError
		if !errors.As(err, &ce) || err.Error() != c.want {
			t.Errorf("Preflight: %v, want CapacityError %q", err, c.want)
		}
		if _, err := s.Program(ctx, c.spec); err == nil || err.Error() != c.want {
			t.Errorf("Program: %v, want %q", err, c.want)
		}
		if n, err := s.Verify(ctx); err != nil || n.MapEntries != 0 {
			t.Errorf("after a refused Program the maps hold %+v (%v), want nothing", n, err)
		}
	}
	if err := s.Preflight(dummySpec(250, 4)); err != nil {
		t.Errorf("Preflight of a spec that fits: %v", err)
	}
	// Flows: ebpf needs one reverse-NAT entry per UDP flow, ebpf-tc two
	// conntrack entries per flow.
	s.opts.ExpectedFlows = 101
	want := "ebpf: UDP reverse-NAT map holds 100 entries, 101 expected flows needs 101; use --auto-size or a larger --bpf-ct-max"
	if err := s.Preflight(dummySpec(1, 1)); err == nil || err.Error() != want {
		t.Errorf("Preflight: %v, want %q", err, want)
	}
}

// TestAutoSize: with AutoSize, Preflight grows the maps to fit; Program
// grows them too while the programs stay attached: the cgroup then runs the
// new programs (reading the new maps), and every entry and live flow was
// carried over.
func TestAutoSize(t *testing.T) {
	s := newSocketLB(t, Options{LBMapMax: 1000, FlowMapMax: 100, AutoSize: true, ExpectedFlows: 150})
	if err := s.Preflight(dummySpec(300, 4)); err != nil {
		t.Fatal(err)
	}
	if got, want := s.Capacity(), (Capacity{ServiceMap: 1000, BackendMap: 2048, FlowMap: 256}); got != want {
		t.Errorf("after Preflight capacity is %+v, want %+v", got, want)
	}
	program(t, s, dummySpec(300, 4))
	flow := [16]byte{1}
	if err := s.objs.flow.Put(flow, [8]byte{2}); err != nil {
		t.Fatal(err)
	}
	oldProg := progID(t, s.objs.coll.Programs["cnb_sock4_conn"])

	// Larger than Preflight said: Program grows again.
	program(t, s, dummySpec(3000, 4))
	if got, want := s.Capacity(), (Capacity{ServiceMap: 4096, BackendMap: 16384, FlowMap: 256}); got != want {
		t.Errorf("after Program capacity is %+v, want %+v", got, want)
	}
	var v [8]byte
	if err := s.objs.flow.Lookup(flow, &v); err != nil || v != [8]byte{2} {
		t.Errorf("flow entry not carried over: %v %v", v, err)
	}
	newProg := progID(t, s.objs.coll.Programs["cnb_sock4_conn"])
	if newProg == oldProg {
		t.Fatal("programs were not reloaded")
	}
	ids := cgroupProgs(t, s.Cgroup(), cebpf.AttachCGroupInet4Connect)
	if len(ids) != 1 || ids[0] != newProg {
		t.Errorf("connect4 programs attached: %v, want only the new one %d (old %d)", ids, newProg, oldProg)
	}
}

func progID(t *testing.T, p *cebpf.Program) cebpf.ProgramID {
	t.Helper()
	info, err := p.Info()
	if err != nil {
		t.Fatal(err)
	}
	id, ok := info.ID()
	if !ok {
		t.Skip("skipping: kernel does not report program IDs")
	}
	return id
}

// cgroupProgs lists the programs attached directly to cgroup for at.
func cgroupProgs(t *testing.T, cgroup string, at cebpf.AttachType) []cebpf.ProgramID {
	t.Helper()
	f, err := os.Open(cgroup)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	res, err := link.QueryPrograms(link.QueryOptions{Target: int(f.Fd()), Attach: at})
	if err != nil {
		t.Fatalf("query %s programs of %s: %v", at, cgroup, err)
	}
	var ids []cebpf.ProgramID
	for _, p := range res.Programs {
		ids = append(ids, p.ID)
	}
	return ids
}
