package suite

import (
	"fmt"

	"github.com/cnibench/cnibench/kinds"
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
	if c := s.Churn; c != nil {
		line += fmt.Sprintf("; churn %.1f/s (asked %.4g), %d held, programmed in p50 %.3g ms, p99 %.3g ms", c.Achieved, c.Requested, c.Held, c.P50Ms, c.P99Ms)
	}
	return line
}
