package suite

import (
	"fmt"

	"github.com/cnibench/cnibench/results"
)

// SampleLine is the one-line progress summary of a sample.
func SampleLine(test string, s results.Sample) string {
	if s.Error != "" {
		return "FAILED: " + s.Error
	}
	if d := s.DNS; d != nil {
		line := fmt.Sprintf("%10.0f q/s", d.QPS)
		if d.Latency != nil {
			line += fmt.Sprintf("  p50 %7.1f µs  p99 %7.1f µs", d.Latency.P50Us, d.Latency.P99Us)
		}
		if d.LossPercent > 0 {
			line += fmt.Sprintf("  lost %.2f%%", d.LossPercent)
		}
		if d.MissedTarget {
			line += fmt.Sprintf("  MISSED target by %.1f%%", d.MissedByPercent)
		}
		if d.ClientSaturated {
			line += "  (client CPU saturated)"
		}
		return line
	}
	if h := s.HTTP; h != nil {
		line := fmt.Sprintf("%10.0f req/s", h.RPS)
		if h.Latency != nil {
			line += fmt.Sprintf("  p50 %7.1f µs  p99 %7.1f µs", h.Latency.P50Us, h.Latency.P99Us)
		}
		if h.Errors.Total > 0 {
			line += fmt.Sprintf("  %d errors", h.Errors.Total)
		}
		if h.MissedTarget {
			line += fmt.Sprintf("  MISSED target by %.1f%%", h.MissedByPercent)
		}
		if h.ClientSaturated {
			line += "  (client CPU saturated)"
		}
		return line
	}
	e := s.Engine
	if e == nil {
		return "no result"
	}
	if e.Latency != nil && e.Transactions > 0 {
		return fmt.Sprintf("%10.0f /s  p50 %7.1f µs  p99 %7.1f µs", e.RatePerSec, e.Latency.P50Us, e.Latency.P99Us)
	}
	line := fmt.Sprintf("%8.2f Gbit/s", e.ThroughputBitsSec/1e9)
	if e.PacketsSent > 0 {
		line += fmt.Sprintf("  loss %5.2f%%  (offered %.2f Gbit/s)", e.LossPercent, e.OfferedBitsSec/1e9)
	}
	return line
}
