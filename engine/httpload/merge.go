package httpload

import (
	"github.com/cnibench/cnibench/engine/internal/window"
	"github.com/cnibench/cnibench/engine/kinds"
	"github.com/cnibench/cnibench/stats"
)

// merge is the aggregate of HTTP results measured at once by several
// pairs (kinds.Kind.Merge): requests, errors, bytes, rates and target
// rates summed, both latencies from the merged histograms, the shortfall
// against the summed target recomputed, the client saturated if any pair's
// was. Timelines are per pair and not merged.
func merge(rs []*Result) (*Result, error) {
	out := &Result{Options: rs[0].Options, URL: rs[0].URL, Address: rs[0].Address, Mode: rs[0].Mode,
		LocalPorts: rs[0].LocalPorts, PortShareNote: rs[0].PortShareNote}
	spans := make([]*kinds.RunnerResults, len(rs))
	lat, unc := make([]*stats.Latency, len(rs)), make([]*stats.Latency, len(rs))
	for i, r := range rs {
		spans[i], lat[i], unc[i] = &r.RunnerResults, r.Latency, r.LatencyUncorrected
		addCounts(out, r)
	}
	out.RunnerResults = kinds.Span(spans)
	if out.TargetQPS > 0 {
		out.OpenLoop = window.Achieved(out.RPS, out.TargetQPS, MissedTargetRatio)
	}
	var err error
	if out.Latency, err = stats.MergePresent(lat...); err != nil {
		return nil, err
	}
	out.LatencyUncorrected, err = stats.MergePresent(unc...)
	return out, err
}

// addCounts adds r's counts, rates and flags to the aggregate out.
func addCounts(out, r *Result) {
	out.Conns += r.Conns
	out.Connects += r.Connects
	out.Requests += r.Requests
	out.OK += r.OK
	for code, n := range r.StatusCodes {
		if out.StatusCodes == nil {
			out.StatusCodes = map[int]int64{}
		}
		out.StatusCodes[code] += n
	}
	out.Errors.Add(r.Errors)
	out.RPS += r.RPS
	out.BytesSent += r.BytesSent
	out.BytesReceived += r.BytesReceived
	out.TargetQPS += r.TargetQPS
	out.ClientCPU.Add(r.ClientCPU)
}
