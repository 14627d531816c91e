package engine

import (
	"math"
	"testing"
	"time"

	"github.com/cnibench/cnibench/engine/kinds"
	"github.com/cnibench/cnibench/stats"
)

// latencyOf is a latency summary of n values of us microseconds each.
func latencyOf(t *testing.T, us []int) *stats.Latency {
	t.Helper()
	h := stats.NewHistogram()
	for _, v := range us {
		stats.Record(h, time.Duration(v)*time.Microsecond)
	}
	l, err := stats.Summarize(h)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestMergeRRSumsAndMergesHistograms(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	a := &Result{Test: TCPRR, Streams: 1, Transactions: 1000, RatePerSec: 1000, Errors: 1,
		RunnerResults: kinds.RunnerResults{Start: t0, End: t0.Add(time.Second), Seconds: 1}}
	b := &Result{Test: TCPRR, Streams: 1, Transactions: 500, RatePerSec: 500, Stalled: true, LongestGapSec: 1.5,
		RunnerResults: kinds.RunnerResults{Start: t0.Add(10 * time.Millisecond), End: t0.Add(1010 * time.Millisecond), Seconds: 1}}
	// a: 100 fast answers; b: 100 slow ones. The merged median lies
	// between them, which no average of the two medians says exactly.
	a.Latency = latencyOf(t, repeat(10, 100))
	b.Latency = latencyOf(t, repeat(1000, 100))
	k, _ := kinds.Lookup("rr")
	got, err := k.Merge([]any{a, b})
	if err != nil {
		t.Fatal(err)
	}
	m := got.(*Result)
	if m.Transactions != 1500 || m.RatePerSec != 1500 || m.Errors != 1 || m.Streams != 2 || !m.Stalled || m.LongestGapSec != 1.5 {
		t.Errorf("sums: %+v", m)
	}
	if !k.Owns(m) {
		t.Error("the aggregate is not an rr result")
	}
	if m.Latency.Count != 200 || m.Latency.MinUs > 11 || m.Latency.MaxUs < 990 || m.Latency.P90Us < 990 {
		t.Errorf("merged latency: %+v", m.Latency)
	}
	if !m.Start.Equal(t0) || !m.End.Equal(t0.Add(1010*time.Millisecond)) || m.Seconds != 1 {
		t.Errorf("span %v..%v %.3f s", m.Start, m.End, m.Seconds)
	}
}

func TestMergeStreamRecomputesLoss(t *testing.T) {
	a := &Result{Test: UDPStream, Streams: 1, BytesReceived: 900, ThroughputBitsSec: 7200, PacketsSent: 10, PacketsReceived: 9}
	b := &Result{Test: UDPStream, Streams: 1, BytesReceived: 1000, ThroughputBitsSec: 8000, PacketsSent: 10, PacketsReceived: 10}
	k, _ := kinds.Lookup("stream")
	got, err := k.Merge([]any{a, b})
	if err != nil {
		t.Fatal(err)
	}
	m := got.(*Result)
	if m.BytesReceived != 1900 || m.ThroughputBitsSec != 15200 || math.Abs(m.LossPercent-5) > 1e-9 || m.Latency != nil {
		t.Errorf("aggregate %+v", m)
	}
	if _, err := k.Merge([]any{a, "not a result"}); err == nil {
		t.Error("a foreign result merged")
	}
	if _, err := k.Merge(nil); err == nil {
		t.Error("nothing merged into something")
	}
}

func repeat(v, n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = v
	}
	return out
}
