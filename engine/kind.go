package engine

import (
	"fmt"

	"github.com/cnibench/cnibench/engine/kinds"
)

// The engine's two kinds: stream tests (throughput, UDP loss) and
// request/response tests (rate, latency). Both run engine.Run with Options
// and return a Result; a result with transactions and latency is rr. They
// share results.json's keys ("options", "engine"), which every document
// has used for them since before the registry.
func init() {
	kinds.Register(kinds.Kind{
		Name:  "stream",
		Order: 10,
		Key:   "engine", OptionsKey: "options",
		NewResult: kinds.New[Result](), NewOptions: kinds.New[Options](),
		OwnsOptions: func(o any) bool { t := o.(*Options).Test; return t == TCPStream || t == UDPStream },
		Options:     options, Run: kinds.RunWith(Run), Merge: kinds.MergeWith(merge),
		Tests: []kinds.Test{
			{Name: "TCP_STREAM", Template: TCPStream, About: "TCP throughput, 1 stream (receiver's goodput)"},
			{Name: "TCP_STREAM_MULTI", Template: TCPStream, Multi: true, About: "TCP throughput, N streams"},
			{Name: "UDP_STREAM", Template: UDPStream, About: "UDP delivered goodput and loss, 1 flow"},
			{Name: "UDP_STREAM_MULTI", Template: UDPStream, Multi: true, About: "UDP delivered goodput and loss, N flows"},
		},
		Ports: ports(TCPStream, UDPStream),
		Owns:  func(r any) bool { e, ok := r.(*Result); return ok && e != nil && !isRR(e) },
		Read:  readStream,
		PerWork: kinds.PerWork{Client: kinds.MetricClientCPUGB, Server: kinds.MetricServerCPUGB,
			Datapath: kinds.MetricDatapathCPUGB, Unit: "s", Head: "DP CPU s/GB"},
		Line: func(r any) string { return streamLine(r.(*Result)) },
		Table: kinds.Table{Order: 40, Columns: []kinds.Column{
			{Head: "Streams", Special: kinds.ColumnStreams},
			{Head: "Gbit/s", Metric: kinds.MetricThroughput, Format: "%.2f"},
			{Head: "Offered Gbit/s", Metric: kinds.MetricOffered, Format: "%.2f"},
			{Head: "Loss %", Metric: kinds.MetricLoss, Format: "%.2f"},
			{Head: "CPU s/GB (cli+srv)", Metric: kinds.MetricClientCPUGB, Plus: kinds.MetricServerCPUGB, Format: "%.2f"},
		}},
	})
	kinds.Register(kinds.Kind{
		Name:  "rr",
		Order: 20,
		Key:   "engine", OptionsKey: "options",
		NewResult: kinds.New[Result](), NewOptions: kinds.New[Options](),
		OwnsOptions: func(o any) bool { t := o.(*Options).Test; return t == TCPRR || t == UDPRR || t == TCPCRR },
		Options:     options, Run: kinds.RunWith(Run), Merge: kinds.MergeWith(merge),
		Tests: []kinds.Test{
			{Name: "TCP_RR", Template: TCPRR, About: "TCP request/response rate and latency"},
			{Name: "UDP_RR", Template: UDPRR, About: "UDP request/response rate and latency"},
			{Name: "TCP_CRR", Template: TCPCRR, About: "new TCP connection per request: rate and latency"},
		},
		Ports: ports(TCPRR, UDPRR, TCPCRR),
		Owns:  func(r any) bool { e, ok := r.(*Result); return ok && e != nil && isRR(e) },
		Read:  readRR,
		PerWork: kinds.PerWork{Client: kinds.MetricClientCPUOp, Server: kinds.MetricServerCPUOp,
			Datapath: kinds.MetricDatapathCPUOp, Unit: "µs", Head: "DP CPU µs/op"},
		Line: func(r any) string { return rrLine(r.(*Result)) },
		Table: kinds.Table{Order: 10, Columns: []kinds.Column{
			{Head: "Rate/s", Metric: kinds.MetricRate, Format: "%.0f"},
			{Head: "Min µs", Metric: kinds.MetricMin, Format: "%.1f"},
			{Head: "P50 µs", Metric: kinds.MetricP50, Format: "%.1f"},
			{Head: "P90 µs", Metric: kinds.MetricP90, Format: "%.1f"},
			{Head: "P99 µs", Metric: kinds.MetricP99, Format: "%.1f"},
			{Head: "P99.9 µs", Metric: kinds.MetricP999, Format: "%.1f"},
			{Head: "Max µs", Metric: kinds.MetricMax, Format: "%.1f"},
			{Head: "CPU µs/op (cli+srv)", Metric: kinds.MetricClientCPUOp, Plus: kinds.MetricServerCPUOp, Format: "%.2f"},
		}},
	})
}

// options are a test's Options on one server: its Template is the engine
// test; Multi tests run the plan's flows, request/response ones wait in
// the plan's mode, and TCP_CRR takes its ports from the placement's share.
func options(t kinds.Test, host string, p kinds.Plan) any {
	test := t.Template.(Test)
	o := &Options{Test: test, Host: host, Port: p.Port(PortName(test), 0), RunnerOptions: p.Runner(), Streams: 1}
	if t.Multi {
		o.Streams = p.Streams
	}
	switch test {
	case TCPRR, UDPRR, TCPCRR:
		o.Mode = Mode(p.Mode)
	}
	if test == TCPCRR {
		o.PortShare = p.PortShare
	}
	if test == UDPStream {
		o.MessageSize = p.UDPMessageSize
	}
	return o
}

// isRR tells a request/response result from a stream one.
func isRR(e *Result) bool { return e.Latency != nil && e.Transactions > 0 }

// ports are the data ports of tests, named as Services name them
// ("tcp-rr").
func ports(tests ...Test) []kinds.Port {
	var out []kinds.Port
	for _, t := range tests {
		proto := "tcp"
		if t == UDPStream || t == UDPRR {
			proto = "udp"
		}
		out = append(out, kinds.Port{Name: PortName(t), Number: DefaultPort[t], Proto: proto, Exposed: true})
	}
	return out
}

// PortName is a test's port name: "tcp-stream", "udp-rr", ...
func PortName(t Test) string {
	return map[Test]string{TCPStream: "tcp-stream", UDPStream: "udp-stream", TCPRR: "tcp-rr", UDPRR: "udp-rr", TCPCRR: "tcp-crr"}[t]
}

func readStream(_ string, r any) kinds.Reading {
	e := r.(*Result)
	rd := kinds.Reading{Seconds: e.Seconds, Work: float64(e.BytesReceived) / 1e9, Scale: 1, Errors: e.Errors, FirstError: e.ErrorMsg}
	rd.Values = append(rd.Values, kinds.Value{Name: kinds.MetricThroughput, Unit: "Gbit/s", Better: kinds.HigherIsBetter, Headline: true, V: e.ThroughputBitsSec / 1e9})
	if e.PacketsSent > 0 {
		rd.Values = append(rd.Values,
			kinds.Value{Name: kinds.MetricOffered, Unit: "Gbit/s", Better: kinds.Info, V: e.OfferedBitsSec / 1e9},
			kinds.Value{Name: kinds.MetricLoss, Unit: "%", Better: kinds.LowerIsBetter, V: e.LossPercent, Complement: "delivered share"})
	}
	return rd
}

func readRR(test string, r any) kinds.Reading {
	e := r.(*Result)
	unit := "trans/s"
	if e.Test == TCPCRR || test == "TCP_CRR" {
		unit = "conn/s"
	}
	return kinds.Reading{
		Values:  []kinds.Value{{Name: kinds.MetricRate, Unit: unit, Better: kinds.HigherIsBetter, Headline: true, V: e.RatePerSec}},
		Latency: e.Latency, Seconds: e.Seconds, Work: float64(e.Transactions), Scale: 1e6,
		Errors: e.Errors, FirstError: e.ErrorMsg,
		PortExhausted: e.PortExhaustion, Stalled: e.Stalled, LongestGap: e.LongestGapSec,
	}
}

func streamLine(e *Result) string {
	line := fmt.Sprintf("%8.2f Gbit/s", e.ThroughputBitsSec/1e9)
	if e.PacketsSent > 0 {
		line += fmt.Sprintf("  loss %5.2f%%  (offered %.2f Gbit/s)", e.LossPercent, e.OfferedBitsSec/1e9)
	}
	return line
}

// rrLine adds what makes a request/response rate suspect: errors, running
// out of local ports, a stall.
func rrLine(e *Result) string {
	line := fmt.Sprintf("%10.0f /s  p50 %7.1f µs  p99 %7.1f µs", e.RatePerSec, e.Latency.P50Us, e.Latency.P99Us)
	if e.Errors > 0 {
		line += fmt.Sprintf("  %d errors", e.Errors)
	}
	if e.PortExhaustion {
		line += "  OUT OF LOCAL PORTS (EADDRNOTAVAIL): not a datapath rate"
	}
	if e.Stalled {
		line += fmt.Sprintf("  STALLED %.1f s", e.LongestGapSec)
	}
	return line
}
