package engine

import (
	"fmt"
	"time"

	"github.com/cnibench/cnibench/stats"
)

// fillRR merges the flows' latency histograms (never their percentiles).
func fillRR(rc *runCtx, r *Result) error {
	r.Mode = rc.o.Mode
	total := stats.NewHistogram()
	for i := range rc.flows {
		f := &rc.flows[i]
		r.Transactions += f.trans
		if f.hist != nil {
			if dropped := total.Merge(f.hist); dropped > 0 {
				return fmt.Errorf("%s: merge histograms: %d values out of range", rc.o.Test, dropped)
			}
		}
	}
	if r.Seconds > 0 {
		r.RatePerSec = float64(r.Transactions) / r.Seconds
	}
	if rc.o.Test == TCPRR || rc.o.Test == TCPCRR {
		var gap time.Duration
		for i := range rc.flows {
			gap = max(gap, rc.flows[i].finalGap(rc))
		}
		r.LongestGapSec = gap.Seconds()
		r.Stalled = gap >= stallGap
	}
	// A request/response test that completed nothing measured a stall, not
	// a rate: say so rather than report a rate of 0 as a result.
	if r.Transactions == 0 {
		why := ""
		if r.ErrorMsg != "" {
			why = ", first: " + r.ErrorMsg
		}
		return fmt.Errorf("%s: no transaction completed in the %.2fs measured interval (%d errors%s): the path or the machine stalled", rc.o.Test, r.Seconds, r.Errors, why)
	}
	lat, err := stats.Summarize(total)
	if err != nil {
		return fmt.Errorf("%s: %w", rc.o.Test, err)
	}
	r.Latency = lat
	return nil
}
