package suite

import (
	"math"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/procstat"
	"github.com/cnibench/cnibench/results"
)

func mustStat(t *testing.T, text string) procstat.Stat {
	t.Helper()
	s, err := procstat.Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Steal is the hypervisor's share of all CPU time between two readings;
// guest time (already in user) is not counted twice.
func TestHostLoadSteal(t *testing.T) {
	a := mustStat(t, "cpu  100 0 50 800 0 0 0 50 30 0\n")
	b := mustStat(t, "cpu  200 0 100 1600 0 0 0 100 60 0\n")
	if h := hostLoad(a, b, results.Sample{}); math.Abs(h.StealPct-5) > 1e-9 {
		t.Errorf("steal %.2f%%, want 5%%", h.StealPct)
	}
}

// The machine's busy cores during a sample are told apart into the
// benchmark's own (its agents' cgroups and the datapath processes it
// runs) and everything else.
func TestHostLoadOwnAndOther(t *testing.T) {
	a := mustStat(t, "cpu  100 0 50 800 0 0 0 0 0 0\n")
	b := mustStat(t, "cpu  250 0 100 850 0 0 50 0 0 0\n") // busy 1.5 + 0.5 + 0.5 s
	start := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	s := results.Sample{Start: start, End: start.Add(2 * time.Second), ClientCPUSec: 1.0, ServerCPUSec: 0.6,
		DatapathUsage: &results.DatapathUsage{CPUSec: 0.4}}
	h := hostLoad(a, b, s)
	if math.Abs(h.BusyCores-1.25) > 1e-9 || math.Abs(h.OwnCores-1.0) > 1e-9 || math.Abs(h.OtherCores()-0.25) > 1e-9 {
		t.Errorf("busy %.3f own %.3f other %.3f, want 1.25, 1.0, 0.25", h.BusyCores, h.OwnCores, h.OtherCores())
	}
}

type pinner struct{ client, server []int }

func (p pinner) PinnedCPUs() ([]int, []int) { return p.client, p.server }

// The pinned CPUs' time is the union of the client's and the server's
// (a CPU both use counted once), every CPU when either is unpinned.
func TestPinnedCPU(t *testing.T) {
	a := mustStat(t, "cpu 0 0 0 0 0 0 0 0\ncpu0 100 0 100 100 0 0 0 0\ncpu1 0 0 0 0 0 0 0 0\ncpu2 0 0 0 0 0 0 0 0\n")
	b := mustStat(t, "cpu 500 0 500 500 0 0 300 0\ncpu0 150 10 120 100 0 5 40 0\ncpu1 100 0 50 20 0 0 30 0\ncpu2 50 0 50 0 0 0 0 0\n")
	p := pinnedCPU(pinner{[]int{1, 0}, []int{0}}, a, b)
	// cpu0: user 0.5 nice 0.1 sys 0.2 irq 0.05 softirq 0.4; cpu1: 1, 0.5, 0.3.
	if p.CPUs != "0,1" || math.Abs(p.BusySec-3.05) > 1e-9 || math.Abs(p.SoftirqSec-0.75) > 1e-9 ||
		math.Abs(p.UserSec-1.6) > 1e-9 || math.Abs(p.SystemSec-0.7) > 1e-9 {
		t.Errorf("pinned %+v", p)
	}
	if all := pinnedCPU(pinner{nil, []int{0}}, a, b); all.CPUs != "all" || math.Abs(all.SoftirqSec-3) > 1e-9 {
		t.Errorf("unpinned %+v", all)
	}
}
