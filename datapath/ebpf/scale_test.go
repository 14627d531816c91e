package ebpf

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cnibench/cnibench/lab"
)

// TestProgram30000x4 programs 30,000 Services of 4 endpoints (the sweep's
// default largest step) into fresh maps, re-programs them (a full sync of
// unchanged state) and adds 1,000 more incrementally, verifying each time.
// Durations are logged, not asserted: speed is a benchmark (BENCHMARKS.md).
func TestProgram30000x4(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping in -short")
	}
	s := newSocketLB(t, Options{AutoSize: true})
	ctx := context.Background()
	spec := dummySpec(30000, 4)
	if err := s.Preflight(spec); err != nil {
		t.Fatal(err)
	}
	t.Logf("capacity after Preflight: %+v", s.Capacity())
	step := func(what string) {
		t.Helper()
		st, err := s.Program(ctx, spec)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		got, err := s.Verify(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if want := s.Expected(spec); got != want {
			t.Fatalf("Verify %+v, want %+v", got, want)
		}
		mem, err := s.Memory(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d services x 4: program %v (generate %v, kernel %v, %d bytes), verify %v, map memory %.1f MiB",
			what, len(spec.Services), (st.Generate + st.Apply).Round(time.Millisecond), st.Generate.Round(time.Millisecond),
			st.Apply.Round(time.Millisecond), st.Bytes, time.Since(start).Round(time.Millisecond), float64(mem.BPFMapBytes)/(1<<20))
	}
	step("first")
	step("full resync")
	s.opts.Incremental = true
	spec = dummySpec(31000, 4)
	step("incremental +1000")
	per, err := s.MapMemory()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("map memory by map: %v", per)
}

// BenchmarkProgram30000x4 measures a full resync of 30,000 Services x 4
// endpoints (the target: < 1 s), split into our part (building the
// table and batches: "gen-ms") and the kernel's ("kernel-ms"):
//
//	go test -run '^$' -bench Program30000 -benchtime 20x ./datapath/ebpf
func BenchmarkProgram30000x4(b *testing.B) {
	if err := lab.RequirePrivileges(); err != nil {
		b.Skip(err)
	}
	m := cgroup2Mount()
	if m == "" {
		b.Skip("no cgroup v2")
	}
	dir := filepath.Join(m, fmt.Sprintf("cnb-c2-bench-%06d", rand.IntN(1000000)))
	if err := os.Mkdir(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	defer os.Remove(dir)
	s, err := NewSocketLB(dir, Options{AutoSize: true})
	if err != nil {
		b.Skip(err)
	}
	defer s.Close()
	ctx := context.Background()
	spec := dummySpec(30000, 4)
	if _, err := s.Program(ctx, spec); err != nil {
		b.Fatal(err)
	}
	var gen, apply time.Duration
	for b.Loop() {
		st, err := s.Program(ctx, spec)
		if err != nil {
			b.Fatal(err)
		}
		gen += st.Generate
		apply += st.Apply
	}
	n := float64(b.N)
	b.ReportMetric(gen.Seconds()*1000/n, "gen-ms")
	b.ReportMetric(apply.Seconds()*1000/n, "kernel-ms")
	b.ReportMetric(100*gen.Seconds()/(gen+apply).Seconds(), "gen-%")
}
