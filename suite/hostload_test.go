package suite

import (
	"math"
	"testing"
)

// Steal is the hypervisor's share of all CPU time between two readings;
// guest time (already in user) is not counted twice.
func TestHostLoadSteal(t *testing.T) {
	a, ok1 := parseCPUTimes("cpu  100 0 50 800 0 0 0 50 30 0\ncpu0 1 2 3\n")
	b, ok2 := parseCPUTimes("cpu  200 0 100 1600 0 0 0 100 60 0\n")
	if !ok1 || !ok2 || a.total != 1000 || a.steal != 50 {
		t.Fatalf("parsed %+v %v %v", a, ok1, ok2)
	}
	if h := hostLoad(a, b); math.Abs(h.StealPct-5) > 1e-9 {
		t.Errorf("steal %.2f%%, want 5%%", h.StealPct)
	}
	if _, ok := parseCPUTimes("intr 1 2 3\n"); ok {
		t.Error("a text without the cpu line parsed")
	}
}
