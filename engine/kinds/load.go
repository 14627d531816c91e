package kinds

import (
	"fmt"

	"github.com/cnibench/cnibench/stats"
)

// Load is what the load engines (HTTP, DNS) report alike under their own
// names: a rate of answered requests or queries, closed loop (max rate) or
// open loop (a fixed target rate, latency corrected for coordinated
// omission), and the client's CPU use.
type Load struct {
	Rate               float64 // answered per second
	RateName, RateUnit string  // the rate metric, e.g. "request rate", "req/s"
	Latency            *stats.Latency
	Uncorrected        *stats.Latency
	Ops                int64   // complete answers
	Seconds            float64 // measured interval
	OpenLoop                   // TargetQPS > 0: open loop
	ClientCPU                  // the client's CPU over the interval
	Errors             int64
	FirstError         string
}

// NoAnswer is a load sample's failure when not one request was answered
// in the measured interval: a stall to report, not a rate of 0.
func NoAnswer(what string, seconds float64, errors int64, first string) error {
	if first != "" {
		first = ", first: " + first
	}
	return fmt.Errorf("no %s in the %.2fs measured interval (%d errors%s)", what, seconds, errors, first)
}

// Reading is a load sample's reading: at a fixed rate the rate is set by
// the plan, so the headline is latency alone and the shortfall is a
// metric; at max rate, the rate leads.
func (l Load) Reading() Reading {
	openLoop := l.TargetQPS > 0
	rd := Reading{Latency: l.Latency, Seconds: l.Seconds, Work: float64(l.Ops), Scale: 1e6,
		Errors: l.Errors, FirstError: l.FirstError, Saturated: l.ClientSaturated, Missed: l.MissedTarget, MissedBy: l.MissedByPercent}
	rd.Values = append(rd.Values, Value{Name: l.RateName, Unit: l.RateUnit, Better: HigherIsBetter, Headline: !openLoop, V: l.Rate})
	if openLoop {
		rd.Values = append(rd.Values, Value{Name: MetricMissedBy, Unit: "%", Better: LowerIsBetter, V: l.MissedByPercent, Complement: "achieved share of the target rate"})
		if u := l.Uncorrected; u != nil {
			rd.Uncorrected = u
			rd.Values = append(rd.Values, Value{Name: MetricP99Uncorr, Unit: "µs", Better: Info, V: P99(u)})
		}
	}
	if l.ClientCPUs > 0 {
		rd.Values = append(rd.Values, Value{Name: MetricClientUtil, Unit: "%", Better: Info, V: 100 * l.ClientCPUUtil})
	}
	return rd
}

// Line is a load sample's progress line: rate, latency, the engine's own
// trouble (extra), and the flags that make a number suspect.
func (l Load) Line(unit, extra string) string {
	line := fmt.Sprintf("%10.0f %s", l.Rate, unit)
	if l.Latency != nil {
		line += fmt.Sprintf("  p50 %7.1f µs  p99 %7.1f µs", l.Latency.P50Us, l.Latency.P99Us)
	}
	line += extra
	if l.MissedTarget {
		line += fmt.Sprintf("  MISSED target by %.1f%%", l.MissedByPercent)
	}
	if l.ClientSaturated {
		line += "  (client CPU saturated)"
	}
	return line
}

// LoadColumns are the terminal-table columns of a load kind: its rate,
// latency percentiles, its own failure share (failed, "Errors %") and CPU
// per answer (perWork), then the flags.
func LoadColumns(rateHead, rate, failedHead, failed string, perWork PerWork, cpuHead string) []Column {
	return []Column{
		{Head: rateHead, Metric: rate, Format: "%.0f"},
		{Head: "P50 µs", Metric: MetricP50, Format: "%.1f"},
		{Head: "P90 µs", Metric: MetricP90, Format: "%.1f"},
		{Head: "P99 µs", Metric: MetricP99, Format: "%.1f"},
		{Head: "P99.9 µs", Metric: MetricP999, Format: "%.1f"},
		{Head: failedHead, Metric: failed, Format: "%.2f"},
		{Head: cpuHead, Metric: perWork.Client, Plus: perWork.Server, Format: "%.2f"},
		{Head: "Flags", Special: ColumnFlags},
	}
}

// LoadKind completes the kind of a load engine whose results are *R: Owns,
// Read and Line read a result through its Load view; own returns the
// kind's own metric values and progress-line text (errors, lost queries).
func LoadKind[R any](k Kind, unit string, load func(*R) Load, own func(*R) ([]Value, string)) Kind {
	k.Owns = func(r any) bool { x, ok := r.(*R); return ok && x != nil }
	k.Read = func(_ string, r any) Reading {
		rd := load(r.(*R)).Reading()
		vs, _ := own(r.(*R))
		rd.Values = append(rd.Values, vs...)
		return rd
	}
	k.Line = func(r any) string {
		_, extra := own(r.(*R))
		return load(r.(*R)).Line(unit, extra)
	}
	return k
}
