package suite

import (
	"fmt"

	"github.com/cnibench/cnibench/engine/kinds"
	"github.com/cnibench/cnibench/results"
)

// SampleLine is the one-line progress summary of a sample: its kind's
// line (package kinds), or why it has none.
func SampleLine(test string, s results.Sample) string {
	if s.Error != "" {
		return "FAILED: " + s.Error
	}
	k, ok := kinds.Of(s.Measured())
	if !ok {
		return "no result"
	}
	line := k.Line(s.Measured())
	if n := len(s.Pairs); n > 1 {
		line += fmt.Sprintf("  (%d pairs, aggregate)", n)
	}
	if c := s.Churn; c != nil {
		line += fmt.Sprintf("; churn %.1f/s (asked %.4g), %d held, programmed in p50 %s ms, p99 %s ms", c.Achieved, c.Requested, c.Held, fmtMs(c.P50Ms), fmtMs(c.P99Ms))
	}
	return line
}

// fmtMs prints milliseconds with three significant digits below 10 ms
// (an eBPF map update's 0.263) and whole ones above (kube-proxy's 1104).
func fmtMs(ms float64) string {
	if ms < 10 {
		return fmt.Sprintf("%.3g", ms)
	}
	return fmt.Sprintf("%.0f", ms)
}
