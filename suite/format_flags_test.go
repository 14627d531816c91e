package suite

import (
	"strings"
	"testing"

	"github.com/cnibench/cnibench/engine"
	"github.com/cnibench/cnibench/results"
	"github.com/cnibench/cnibench/stats"
)

func TestSampleLineRRFlags(t *testing.T) {
	lat := &stats.Latency{P50Us: 150, P99Us: 400}
	ok := SampleLine("TCP_CRR", results.Sample{Result: &engine.Result{Transactions: 10, RatePerSec: 5000, Latency: lat}})
	if strings.Contains(ok, "errors") || strings.Contains(ok, "PORTS") || strings.Contains(ok, "STALLED") {
		t.Errorf("healthy line %q carries a flag", ok)
	}
	bad := SampleLine("TCP_CRR", results.Sample{Result: &engine.Result{Transactions: 10, RatePerSec: 270, Latency: lat,
		Errors: 12, PortExhaustion: true, Stalled: true, LongestGapSec: 1.5}})
	for _, want := range []string{"12 errors", "OUT OF LOCAL PORTS", "STALLED 1.5 s"} {
		if !strings.Contains(bad, want) {
			t.Errorf("line %q lacks %q", bad, want)
		}
	}
}
