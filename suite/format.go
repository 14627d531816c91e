package suite

import (
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
	return k.Line(s.Measured())
}
