package dnsload

import (
	"github.com/cnibench/cnibench/engine/dnsload/dnsapi"
	"github.com/cnibench/cnibench/engine/internal/window"
	"github.com/cnibench/cnibench/engine/kinds"
	"github.com/cnibench/cnibench/stats"
)

// merge is the aggregate of DNS results measured at once by several pairs
// (kinds.Kind.Merge), as the HTTP kind's: queries, responses, errors,
// bytes, rates and target rates summed, the loss recomputed from the
// summed timeouts and responses, both latencies from the merged
// histograms, the shortfall against the summed target recomputed, the
// client saturated if any pair's was.
func merge(rs []*Result) (*Result, error) {
	first := rs[0]
	out := &Result{Options: first.Options, Address: first.Address, Mode: first.Mode, Names: first.Names}
	spans := make([]*kinds.RunnerResults, len(rs))
	lat, unc := make([]*stats.Latency, len(rs)), make([]*stats.Latency, len(rs))
	for i, r := range rs {
		spans[i], lat[i], unc[i] = &r.RunnerResults, r.Latency, r.LatencyUncorrected
		add(out, r)
	}
	out.RunnerResults = kinds.Span(spans)
	if n := out.Responses + out.Errors.Timeout; n > 0 {
		out.LossPercent = 100 * float64(out.Errors.Timeout) / float64(n)
	}
	if out.TargetQPS > 0 {
		out.OpenLoop = window.Achieved(out.QPS, out.TargetQPS, dnsapi.MissedTargetRatio)
	}
	var err error
	if out.Latency, err = stats.MergePresent(lat...); err != nil {
		return nil, err
	}
	out.LatencyUncorrected, err = stats.MergePresent(unc...)
	return out, err
}

// add adds r's counts, rates and client CPU to the aggregate out.
func add(out, r *Result) {
	out.Outstanding += r.Outstanding
	out.Threads += r.Threads
	out.Sent += r.Sent
	out.Responses += r.Responses
	out.OK += r.OK
	for code, n := range r.Rcodes {
		if out.Rcodes == nil {
			out.Rcodes = map[string]int64{}
		}
		out.Rcodes[code] += n
	}
	out.Errors.Add(r.Errors)
	out.QPS += r.QPS
	out.BytesSent += r.BytesSent
	out.BytesReceived += r.BytesReceived
	out.TargetQPS += r.TargetQPS
	out.ClientCPU.Add(r.ClientCPU)
}
