// Package latencytest makes latency distributions for the engines' tests
// (the pairs' merges): n equal values, summarised as a run records them.
package latencytest

import (
	"testing"
	"time"

	"github.com/cnibench/cnibench/stats"
)

// Equal is n latencies of us microseconds each.
func Equal(t testing.TB, us, n int) *stats.Latency {
	t.Helper()
	h := stats.NewHistogram()
	for range n {
		stats.Record(h, time.Duration(us)*time.Microsecond)
	}
	l, err := stats.Summarize(h)
	if err != nil {
		t.Fatal(err)
	}
	return l
}
