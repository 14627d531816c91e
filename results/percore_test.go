package results

import (
	"math"
	"testing"

	"github.com/cnibench/cnibench/engine/kinds"
)

// A stream of 25 GB over a 10 s measured interval (2.5 GB/s), in a 10 s
// window in which the nodes' CPUs were busy 5 s (0.5 cores), 1 s of it
// user: 5 GB per core-second, 25 per user core-second, 80% kernel. With
// no user time at all (a datapath entirely in the kernel) the per-user
// figure is 0, not infinite; no work, no CPU or no window is no figure.
func TestWorkPerCore(t *testing.T) {
	n := &NodesCPU{Seconds: 10, Pinned: true, Nodes: []NodeCPU{
		{Node: "node0", CPUs: "0", CPUTimes: CPUTimes{UserSec: 0.5, SystemSec: 1, SoftirqSec: 1}},
		{Node: "node1", CPUs: "1", CPUTimes: CPUTimes{UserSec: 0.5, SystemSec: 1, SoftirqSec: 0.5, IRQSec: 0.5}},
	}}
	pc, ok := WorkPerCore(kinds.Reading{Seconds: 10, Work: 25}, n)
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	if !ok || !near(pc.PerCore, 5) || !near(pc.PerUserCore, 25) || !near(pc.KernelPct, 80) {
		t.Errorf("%+v %v", pc, ok)
	}
	kernelOnly := &NodesCPU{Seconds: 10, Nodes: []NodeCPU{{Node: "all", CPUs: "all", CPUTimes: CPUTimes{SoftirqSec: 2}}}}
	if pc, ok := WorkPerCore(kinds.Reading{Seconds: 10, Work: 25}, kernelOnly); !ok || pc.PerUserCore != 0 || !near(pc.PerCore, 12.5) || pc.KernelPct != 100 {
		t.Errorf("kernel only: %+v %v", pc, ok)
	}
	for _, c := range []struct {
		rd kinds.Reading
		n  *NodesCPU
	}{{kinds.Reading{Seconds: 10}, n}, {kinds.Reading{Seconds: 10, Work: 1}, nil}, {kinds.Reading{Seconds: 10, Work: 1}, &NodesCPU{Seconds: 10}}, {kinds.Reading{Work: 1}, n}} {
		if _, ok := WorkPerCore(c.rd, c.n); ok {
			t.Errorf("%+v on %+v: a figure from nothing", c.rd, c.n)
		}
	}
}
