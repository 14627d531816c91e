package engine

import (
	"maps"

	"github.com/cnibench/cnibench/engine/kinds"
	"github.com/cnibench/cnibench/stats"
)

// merge is the aggregate of stream or request/response results measured at
// once by several pairs (kinds.Kind.Merge): bytes, packets, transactions,
// errors and rates summed (each pair's rate is over its own interval, and
// the intervals are aligned), loss recomputed from the summed packets,
// latency from the merged histograms, flags if any pair raised them.
func merge(rs []*Result) (*Result, error) {
	out := &Result{Test: rs[0].Test, Options: rs[0].Options, Mode: rs[0].Mode, LocalPorts: rs[0].LocalPorts, PortShareNote: rs[0].PortShareNote}
	spans := make([]*kinds.RunnerResults, len(rs))
	var lats []*stats.Latency
	for i, r := range rs {
		spans[i] = &r.RunnerResults
		addCounts(out, r)
		if r.Latency != nil {
			lats = append(lats, r.Latency)
		}
	}
	out.RunnerResults = kinds.Span(spans)
	if out.PacketsSent > 0 {
		out.LossPercent = lossPercent(out.PacketsSent, out.PacketsReceived)
	}
	if len(lats) > 0 {
		l, err := stats.Merge(lats...)
		if err != nil {
			return nil, err
		}
		out.Latency = l
	}
	return out, nil
}

// addCounts adds r's counts, rates and flags to the aggregate out.
func addCounts(out, r *Result) {
	out.Streams += r.Streams
	out.Errors += r.Errors
	if out.ErrorMsg == "" {
		out.ErrorMsg = r.ErrorMsg
	}
	if len(r.ErrorsByCause) > 0 && out.ErrorsByCause == nil {
		out.ErrorsByCause = map[string]int64{}
	}
	for cause, n := range maps.All(r.ErrorsByCause) {
		out.ErrorsByCause[cause] += n
	}
	out.PortExhaustion = out.PortExhaustion || r.PortExhaustion
	out.Stalled = out.Stalled || r.Stalled
	out.LongestGapSec = max(out.LongestGapSec, r.LongestGapSec)
	out.BytesSent += r.BytesSent
	out.BytesReceived += r.BytesReceived
	out.ThroughputBitsSec += r.ThroughputBitsSec
	out.OfferedBitsSec += r.OfferedBitsSec
	out.PacketsSent += r.PacketsSent
	out.PacketsReceived += r.PacketsReceived
	out.PacketsOutOfOrder += r.PacketsOutOfOrder
	out.ReceiverSecondsRaw = max(out.ReceiverSecondsRaw, r.ReceiverSecondsRaw)
	out.Transactions += r.Transactions
	out.RatePerSec += r.RatePerSec
	out.ClientCPUUserSec += r.ClientCPUUserSec
	out.ClientCPUSysSec += r.ClientCPUSysSec
}
