package stats

import (
	"math"
	"testing"
	"time"
)

func TestSummarizeKnownDistribution(t *testing.T) {
	h := NewHistogram()
	for i := 1; i <= 1000; i++ {
		Record(h, time.Duration(i)*time.Microsecond)
	}
	l, err := Summarize(h)
	if err != nil {
		t.Fatal(err)
	}
	check := func(name string, got, want float64) {
		if math.Abs(got-want)/want > 0.002 {
			t.Errorf("%s = %.3f µs, want %.3f µs", name, got, want)
		}
	}
	check("p50", l.P50Us, 500)
	check("p90", l.P90Us, 900)
	check("p99", l.P99Us, 990)
	check("max", l.MaxUs, 1000)
	check("min", l.MinUs, 1)
	check("mean", l.MeanUs, 500.5)
	if l.Count != 1000 {
		t.Errorf("count = %d, want 1000", l.Count)
	}
}

// Merging two halves must give the percentiles of the whole, which averaging
// the halves' percentiles does not.
func TestMergeIsExact(t *testing.T) {
	low, high, all := NewHistogram(), NewHistogram(), NewHistogram()
	for i := 0; i < 900; i++ {
		Record(low, 10*time.Microsecond)
		Record(all, 10*time.Microsecond)
	}
	for i := 0; i < 100; i++ {
		Record(high, 1000*time.Microsecond)
		Record(all, 1000*time.Microsecond)
	}
	a, _ := Summarize(low)
	b, _ := Summarize(high)
	want, _ := Summarize(all)
	got, err := Merge(a, b)
	if err != nil {
		t.Fatal(err)
	}
	if got.P99Us != want.P99Us || got.P50Us != want.P50Us || got.Count != want.Count {
		t.Fatalf("merged p50/p99/count = %v/%v/%d, want %v/%v/%d", got.P50Us, got.P99Us, got.Count, want.P50Us, want.P99Us, want.Count)
	}
	if avg := (a.P99Us + b.P99Us) / 2; math.Abs(avg-got.P99Us) < 1 {
		t.Fatalf("test is not discriminating: averaged p99 %v equals merged %v", avg, got.P99Us)
	}
}

func TestRecordClampsOutliers(t *testing.T) {
	h := NewHistogram()
	Record(h, 0)
	Record(h, 1000*time.Second)
	if h.TotalCount() != 2 {
		t.Fatalf("count = %d, want 2 (outliers must be kept, clamped)", h.TotalCount())
	}
}

// MergePresent skips the missing distributions (a pair without latency)
// and is nil when none is there.
func TestMergePresent(t *testing.T) {
	h := NewHistogram()
	for range 10 {
		Record(h, 50*time.Microsecond)
	}
	a, _ := Summarize(h)
	if got, err := MergePresent(nil, a, nil, a); err != nil || got == nil || got.Count != 20 {
		t.Errorf("with gaps: %+v %v", got, err)
	}
	if got, err := MergePresent(nil, nil); got != nil || err != nil {
		t.Errorf("none: %+v %v", got, err)
	}
}
