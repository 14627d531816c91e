package labtest

import (
	"context"
	"testing"

	"github.com/cnibench/cnibench/datapath"
)

// OrSkip returns d, as a datapath constructor returned it with err, closed
// at cleanup. It skips the test when err says the machine cannot
// (errors.ErrUnsupported) and fails it on any other error.
func OrSkip[D interface{ Close() error }](t *testing.T, d D, err error) D {
	t.Helper()
	SkipIfUnsupported(t, err)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// Sync programs spec and checks that Verify reads back what Expected says;
// what names the step in the failure.
func Sync(t *testing.T, d datapath.Datapath, spec datapath.Spec, what string) {
	t.Helper()
	if _, err := d.Program(context.Background(), spec); err != nil {
		t.Fatal(err)
	}
	if got, err := d.Verify(context.Background()); err != nil || got != d.Expected(spec) {
		t.Fatalf("%s: %+v, %v (want %+v)", what, got, err, d.Expected(spec))
	}
}

// CheckScale programs n dummy Services × 4 endpoints, checks the counts
// read back and the ruleset size, then closes d twice (Close must be
// idempotent). The caller checks that the namespace is empty afterwards.
func CheckScale(t *testing.T, d datapath.Datapath, n int) {
	t.Helper()
	spec := datapath.Spec{Services: datapath.DummyServices(n, 4)}
	st, err := d.Program(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	got, err := d.Verify(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if want := d.Expected(spec); got != want {
		t.Fatalf("%d services: counts %+v, want %+v", n, got, want)
	}
	mem, err := d.Memory(context.Background())
	if err != nil || mem.RulesetBytes <= 0 {
		t.Fatalf("memory %+v, %v", mem, err)
	}
	t.Logf("%d services × 4: generate %v, apply %v, %d bytes sent; %+v; ruleset %d bytes",
		n, st.Generate, st.Apply, st.Bytes, got, mem.RulesetBytes)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

// PartialSync follows a first sync of DummyServices(20, 3), whose stats
// are first: it syncs the same 20 and 5 more, one with a changed endpoint
// (a reordering is none: both kube-proxy and the lab sort a Service's
// endpoints), checks that Verify reads back what Expected says and that
// the sync sent less than half the first's bytes (it was a partial one),
// and returns the Services synced.
func PartialSync(t *testing.T, d datapath.Datapath, first datapath.ProgramStats) []datapath.Service {
	t.Helper()
	ctx := context.Background()
	grown := datapath.DummyServices(25, 3) // the same 20, then 5 more
	grown[1].Endpoints[0].Port = 9999
	spec := datapath.Spec{Services: grown}
	st, err := d.Program(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := d.Verify(ctx); err != nil || got != d.Expected(spec) {
		t.Fatalf("after the partial sync: %+v, %v (want %+v)", got, err, d.Expected(spec))
	}
	if st.Bytes*2 > first.Bytes {
		t.Errorf("partial sync of 6 new or changed Services sent %d bytes, the full sync of 20 sent %d", st.Bytes, first.Bytes)
	}
	return grown
}

// StaleChains programs 30 Services × 4 into open(), then syncs 20 × 3 (a
// full sync with fewer Services, and other endpoints, deletes what is
// gone), then 10 × restartEndpoints from a second open() in the same
// namespace: a restarted kube-proxy adopts what the first left.
func StaleChains(t *testing.T, open func() datapath.Datapath, restartEndpoints int) {
	t.Helper()
	d := open()
	if _, err := d.Program(context.Background(), datapath.Spec{Services: datapath.DummyServices(30, 4)}); err != nil {
		t.Fatal(err)
	}
	Sync(t, d, datapath.Spec{Services: datapath.DummyServices(20, 3)}, "after shrinking")
	Sync(t, open(), datapath.Spec{Services: datapath.DummyServices(10, restartEndpoints)}, "after restart")
}
