package results

import "github.com/cnibench/cnibench/engine/kinds"

// asLoad returns the load-engine view of an HTTP or DNS sample, for
// Summarize (metrics read it through the kinds' Read).
func asLoad(s Sample) (kinds.Load, bool) {
	switch {
	case s.HTTP != nil:
		h := s.HTTP
		return kinds.Load{Rate: h.RPS, Latency: h.Latency, Ops: h.Requests, Seconds: h.Seconds,
			Saturated: h.ClientSaturated, Missed: h.MissedTarget, MissedBy: h.MissedByPercent}, true
	case s.DNS != nil:
		d := s.DNS
		return kinds.Load{Rate: d.QPS, Latency: d.Latency, Ops: d.Responses, Seconds: d.Seconds,
			Saturated: d.ClientSaturated, Missed: d.MissedTarget, MissedBy: d.MissedByPercent}, true
	}
	return kinds.Load{}, false
}
