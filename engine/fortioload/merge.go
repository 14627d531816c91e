package fortioload

import (
	"strconv"

	"github.com/cnibench/cnibench/engine/internal/window"
	"github.com/cnibench/cnibench/engine/kinds"
	"github.com/cnibench/cnibench/stats"
)

// merge is the aggregate of fortio results measured at once by several
// pairs (kinds.Kind.Merge), as the HTTP kind's: requests, errors, sockets,
// rates and target rates summed, latency from the merged histograms
// (recorded exactly, not in fortio's buckets), the shortfall against the
// summed target recomputed, the client saturated if any pair's was.
// Fortio's own summary is each pair's bucketed view and does not merge:
// the aggregate's keeps the summed calls, errors and actual QPS, and no
// statistics.
func merge(rs []*Result) (*Result, error) {
	first := rs[0]
	out := &Result{Options: first.Options, URL: first.URL, Engine: first.Engine, Mode: first.Mode,
		PortShareNote: first.PortShareNote, Fortio: Summary{RequestedQPS: first.Fortio.RequestedQPS}}
	spans := make([]*kinds.RunnerResults, len(rs))
	lat := make([]*stats.Latency, len(rs))
	for i, r := range rs {
		spans[i], lat[i] = &r.RunnerResults, r.Latency
		out.add(r)
	}
	out.RunnerResults = kinds.Span(spans)
	if out.TargetQPS > 0 {
		out.OpenLoop = window.Achieved(out.RPS, out.TargetQPS, MissedTargetRatio)
		out.Fortio.RequestedQPS = strconv.FormatFloat(out.TargetQPS, 'f', -1, 64) // the pairs' together
	}
	var err error
	out.Latency, err = stats.MergePresent(lat...)
	return out, err
}

// add adds r's counts, rates and client CPU to the aggregate.
func (out *Result) add(r *Result) {
	out.Conns += r.Conns
	out.Sockets += r.Sockets
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
	out.TargetQPS += r.TargetQPS
	out.ClientCPU.Add(r.ClientCPU)
	out.Fortio.Calls += r.Fortio.Calls
	out.Fortio.Errors += r.Fortio.Errors
	out.Fortio.ActualQPS += r.Fortio.ActualQPS
}
