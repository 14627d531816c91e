package results

import (
	"strings"
	"testing"

	"github.com/cnibench/cnibench/engine"
	"github.com/cnibench/cnibench/engine/kinds"
)

// A CRR sample that ran out of local ports or stalled is counted and warned
// about, never passed off as a healthy rate.
func TestMetricsRRPortExhaustionAndStall(t *testing.T) {
	fast := latencyOf(t, 100, 10)
	rr := func(round int, ports, stalled bool) Sample {
		return Sample{Round: round, Result: &engine.Result{RunnerResults: kinds.RunnerResults{Seconds: 4}, Transactions: 100, RatePerSec: 25,
			Latency: fast, Errors: 7, ErrorMsg: "stream 0: connect 10.0.0.1:5205: cannot assign requested address",
			ErrorsByCause: map[string]int64{"EADDRNOTAVAIL": 7}, PortExhaustion: ports, Stalled: stalled, LongestGapSec: 2.5}}
	}
	s, err := Metrics(Result{Test: "TCP_CRR", Samples: []Sample{rr(1, true, false), rr(2, true, true), rr(3, false, false)}})
	if err != nil {
		t.Fatal(err)
	}
	if s.PortExhausted != 2 || s.Stalled != 1 {
		t.Fatalf("port exhausted %d, stalled %d; want 2, 1", s.PortExhausted, s.Stalled)
	}
	all := strings.Join(s.Warnings, "\n")
	for _, want := range []string{"out of local ports (EADDRNOTAVAIL) in 2 of 3 samples", "stalled in 1 of 3 samples", "2.5 s", "21 errors"} {
		if !strings.Contains(all, want) {
			t.Errorf("warnings %q lack %q", all, want)
		}
	}
	healthy, err := Metrics(Result{Test: "TCP_CRR", Samples: []Sample{{Round: 1, Result: &engine.Result{RunnerResults: kinds.RunnerResults{Seconds: 4}, Transactions: 100, RatePerSec: 25, Latency: fast}}}})
	if err != nil {
		t.Fatal(err)
	}
	if healthy.PortExhausted != 0 || healthy.Stalled != 0 || len(healthy.Warnings) != 0 {
		t.Errorf("healthy series flagged: %+v", healthy)
	}
}
