package kinds

import (
	"strings"

	"github.com/cnibench/cnibench/stats"
)

// Better says which way a metric improves, and so whether it gets a verdict.
type Better string

const (
	HigherIsBetter Better = "higher"
	LowerIsBetter  Better = "lower"
	// Info metrics are shown but never judged: min and max latency are one
	// event each, the offered rate is a setting's outcome, not a quality.
	Info Better = "info"
)

// Reading is what one successful sample of a kind measured: its own metric
// values and what the results package derives for every kind alike
// (latency percentiles, CPU per unit of work, warnings).
type Reading struct {
	// Values are the kind's own metrics of the sample, e.g. throughput.
	Values []Value
	// Latency is the sample's latency distribution (nil without one);
	// Uncorrected the open-loop one not corrected for coordinated
	// omission (nil unless the sample ran at a fixed rate).
	Latency     *stats.Latency
	Uncorrected *stats.Latency
	// Seconds is the measured interval; Work the units of work done in it
	// (GB, transactions, requests) and Scale what CPU per unit is
	// multiplied by (1e6 for µs): CPU per unit is CPU s × Scale / Work.
	Seconds, Work, Scale float64
	// Errors counted in a successful sample, and the first one's text.
	Errors     int64
	FirstError string
	// Flags that make the sample's number suspect.
	Saturated     bool    // the client's CPU was the limit
	Missed        bool    // an open-loop sample missed its target rate
	MissedBy      float64 // by this many percent
	PortExhausted bool    // the client ran out of local ports
	Stalled       bool    // a flow completed nothing for LongestGap s
	LongestGap    float64
}

// Value is one metric value of a sample. Complement, when set, names
// 100 − value, which comparisons judge instead (see results.Metric).
type Value struct {
	Name       string
	Unit       string
	Better     Better
	Headline   bool
	V          float64
	Complement string
}

// PerWork names the metrics of CPU per unit of work: the client's, the
// server's and the datapath components', in Unit; Head is the datapath
// column's header in terminal tables.
type PerWork struct {
	Client, Server, Datapath, Unit, Head string
}

// PerRequest is the PerWork of the kinds that count HTTP requests: the
// HTTP kind's and the fortio kind's, whose client measures the same
// server, so that their rows share metrics and read alike.
var PerRequest = PerWork{Client: MetricClientCPUReq, Server: MetricServerCPUReq,
	Datapath: MetricDatapathCPUReq, Unit: "µs", Head: "DP CPU µs/req"}

// What the CPUs a run pinned its agents to spent, per unit of work
// (results.PinnedCPU): all their busy time, the softirq and irq share of
// it, and the part no endpoint's cgroup was charged for.
const (
	PinnedTotal        = "total"
	PinnedSoftirq      = "softirq"
	PinnedUnattributed = "unattributed"
)

// Pinned names the per-unit metric of one of those (PinnedTotal, …):
// "softirq CPU per op" beside "client CPU per op".
func (p PerWork) Pinned(what string) string {
	if p.Client == "" {
		return ""
	}
	return what + strings.TrimPrefix(p.Client, "client")
}

// P99 of one distribution, from its histogram when it carries one.
func P99(l *stats.Latency) float64 {
	if h, err := l.Decode(); err == nil && h.TotalCount() > 0 {
		return float64(h.ValueAtQuantile(99)) / 1e3
	}
	return l.P99Us
}
