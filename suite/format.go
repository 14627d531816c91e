package suite

import (
	"fmt"

	"github.com/cnibench/cnibench/engine"
	"github.com/cnibench/cnibench/results"
	"github.com/cnibench/cnibench/stats"
)

// SampleLine is the one-line progress summary of a sample.
func SampleLine(test string, s results.Sample) string {
	if s.Error != "" {
		return "FAILED: " + s.Error
	}
	if d := s.DNS; d != nil {
		extra := ""
		if d.LossPercent > 0 {
			extra = fmt.Sprintf("  lost %.2f%%", d.LossPercent)
		}
		return loadLine(d.QPS, "q/s", d.Latency, extra, d.MissedTarget, d.MissedByPercent, d.ClientSaturated)
	}
	if h := s.HTTP; h != nil {
		extra := ""
		if h.Errors.Total > 0 {
			extra = fmt.Sprintf("  %d errors", h.Errors.Total)
		}
		return loadLine(h.RPS, "req/s", h.Latency, extra, h.MissedTarget, h.MissedByPercent, h.ClientSaturated)
	}
	e := s.Engine
	if e == nil {
		return "no result"
	}
	if e.Latency != nil && e.Transactions > 0 {
		line := fmt.Sprintf("%10.0f /s  p50 %7.1f µs  p99 %7.1f µs", e.RatePerSec, e.Latency.P50Us, e.Latency.P99Us)
		return line + rrFlags(e)
	}
	line := fmt.Sprintf("%8.2f Gbit/s", e.ThroughputBitsSec/1e9)
	if e.PacketsSent > 0 {
		line += fmt.Sprintf("  loss %5.2f%%  (offered %.2f Gbit/s)", e.LossPercent, e.OfferedBitsSec/1e9)
	}
	return line
}

// loadLine is the progress line of an HTTP or DNS sample: rate, latency,
// the engine's own trouble (extra), and the flags that make a number
// suspect.
func loadLine(rate float64, unit string, lat *stats.Latency, extra string, missed bool, missedBy float64, saturated bool) string {
	line := fmt.Sprintf("%10.0f %s", rate, unit)
	if lat != nil {
		line += fmt.Sprintf("  p50 %7.1f µs  p99 %7.1f µs", lat.P50Us, lat.P99Us)
	}
	line += extra
	if missed {
		line += fmt.Sprintf("  MISSED target by %.1f%%", missedBy)
	}
	if saturated {
		line += "  (client CPU saturated)"
	}
	return line
}

// rrFlags is what makes a request/response rate suspect: errors, running
// out of local ports, a stall.
func rrFlags(e *engine.Result) string {
	var f string
	if e.Errors > 0 {
		f += fmt.Sprintf("  %d errors", e.Errors)
	}
	if e.PortExhaustion {
		f += "  OUT OF LOCAL PORTS (EADDRNOTAVAIL): not a datapath rate"
	}
	if e.Stalled {
		f += fmt.Sprintf("  STALLED %.1f s", e.LongestGapSec)
	}
	return f
}
