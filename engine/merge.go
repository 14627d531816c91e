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
	lats := make([]*stats.Latency, len(rs))
	for i, r := range rs {
		spans[i], lats[i] = &r.RunnerResults, r.Latency
		addCounts(out, r)
	}
	out.RunnerResults = kinds.Span(spans)
	if out.PacketsSent > 0 {
		out.LossPercent = lossPercent(out.PacketsSent, out.PacketsReceived)
	}
	var err error
	out.Latency, err = stats.MergePresent(lats...)
	return out, err
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
