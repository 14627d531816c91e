package results

import "github.com/cnibench/cnibench/stats"

// loadSample is what summaries and metrics read from an HTTP or a DNS
// sample: the two load engines report the same quantities under their own
// names (requests or queries per second, answered requests or queries).
type loadSample struct {
	rate        float64        // RPS or QPS
	latency     *stats.Latency // corrected for coordinated omission at a fixed rate
	uncorrected *stats.Latency
	ops         int64   // complete responses
	seconds     float64 // measured interval
	targetQPS   float64 // > 0: open loop
	cpus        int     // CPUs the client could use
	util        float64 // client CPU use, fraction of cpus
	saturated   bool
	missed      bool
	missedBy    float64
	errors      int64
	firstError  string
}

// asLoad returns the load-engine view of a sample, if it has one.
func asLoad(s Sample) (loadSample, bool) {
	switch {
	case s.HTTP != nil:
		h := s.HTTP
		return loadSample{h.RPS, h.Latency, h.LatencyUncorrected, h.Requests, h.Seconds, h.TargetQPS,
			h.ClientCPUs, h.ClientCPUUtil, h.ClientSaturated, h.MissedTarget, h.MissedByPercent, h.Errors.Total, h.Errors.First}, true
	case s.DNS != nil:
		d := s.DNS
		return loadSample{d.QPS, d.Latency, d.LatencyUncorrected, d.Responses, d.Seconds, d.TargetQPS,
			d.ClientCPUs, d.ClientCPUUtil, d.ClientSaturated, d.MissedTarget, d.MissedByPercent, d.Errors.Total, d.Errors.First}, true
	}
	return loadSample{}, false
}
