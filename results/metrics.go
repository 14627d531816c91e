package results

import (
	"fmt"
	"math"
	"slices"

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

// Kinds of Result, from the kind of its samples.
const (
	KindStream = "stream" // engine stream test: throughput (and UDP loss)
	KindRR     = "rr"     // engine request/response or connect/request/response
	KindHTTP   = "http"   // httpload
	KindDNS    = "dns"    // dnsload
)

// Metric names. They read as nouns ("5% higher throughput") because
// comparisons print them that way.
const (
	MetricThroughput     = "throughput"
	MetricOffered        = "offered rate"
	MetricLoss           = "loss"
	MetricRate           = "rate"
	MetricRPS            = "request rate"
	MetricP50            = "p50 latency"
	MetricP90            = "p90 latency"
	MetricP99            = "p99 latency"
	MetricP999           = "p99.9 latency"
	MetricMin            = "min latency"
	MetricMean           = "mean latency"
	MetricMax            = "max latency"
	MetricP99Uncorr      = "p99 latency, uncorrected"
	MetricErrors         = "errors"
	MetricMissedBy       = "missed target by"
	MetricClientUtil     = "client CPU use"
	MetricClientCPUOp    = "client CPU per op"
	MetricServerCPUOp    = "server CPU per op"
	MetricClientCPUGB    = "client CPU per GB"
	MetricServerCPUGB    = "server CPU per GB"
	MetricClientCPUReq   = "client CPU per request"
	MetricServerCPUReq   = "server CPU per request"
	MetricQPS            = "query rate"
	MetricDNSLoss        = "lost queries"
	MetricClientCPUQuery = "client CPU per query"
	MetricServerCPUQuery = "server CPU per query"
)

// Metric is one named quantity of a Result with one value per sample that
// has it. Values are what comparisons test (one per round, so a verdict
// weighs rounds, not requests); Display is what reports print.
type Metric struct {
	Name     string `json:"name"`
	Unit     string `json:"unit"`
	Better   Better `json:"better"`
	Headline bool   `json:"headline,omitempty"`
	// Values holds one value per successful sample that has the metric, in
	// sample order; Rounds the round of each.
	Values []float64 `json:"values"`
	Rounds []int     `json:"rounds"`
	// Display is the median of Values, except for latency, where it is the
	// percentile of the merged histogram of all samples (Merged is then
	// true): percentiles of rounds are never averaged or taken the median
	// of for display.
	Display float64 `json:"display"`
	Merged  bool    `json:"merged,omitempty"`
	// Complement, when set, names 100 − value (a percentage whose ideal is
	// 0, like loss): comparisons judge that share, higher is better,
	// because a relative change of a loss near 0% means nothing while a
	// drop in the delivered share does (0% → 20% loss is 20% less
	// delivered).
	Complement string `json:"complement,omitempty"`
}

// Judged tells whether comparisons give the metric a verdict.
func (m *Metric) Judged() bool { return m.Better == HigherIsBetter || m.Better == LowerIsBetter }

// ComparedValues returns what comparisons test for m: its values (or their
// complements), whether higher is better, and the noun for verdict texts.
func (m *Metric) ComparedValues() (values []float64, higherIsBetter bool, noun string) {
	if m.Complement == "" {
		return m.Values, m.Better == HigherIsBetter, m.Name
	}
	values = make([]float64, len(m.Values))
	for i, v := range m.Values {
		values[i] = 100 - v
	}
	return values, true, m.Complement
}

// Series is a Result turned into metrics, with what went wrong on the way.
type Series struct {
	Kind       string   `json:"kind"` // KindStream, KindRR, KindHTTP, or "" if no sample succeeded
	Samples    int      `json:"samples"`
	Failed     int      `json:"failed"`
	FirstError string   `json:"first_error,omitempty"`
	Metrics    []Metric `json:"metrics"`
	// Latency is the merged distribution of every sample (nil without
	// latency), the source of the latency metrics' Display values.
	Latency *stats.Latency `json:"-"`
	// HTTP samples whose client CPU saturated, or that missed their
	// open-loop target rate.
	ClientSaturated int `json:"client_saturated,omitempty"`
	MissedTarget    int `json:"missed_target,omitempty"`
	// RR samples whose client ran out of local ports (EADDRNOTAVAIL), or
	// in which a flow completed nothing for a second or more: their rate
	// is not the datapath's.
	PortExhausted int `json:"port_exhausted,omitempty"`
	Stalled       int `json:"stalled,omitempty"`
	// Warnings flag samples whose numbers should not be taken at face
	// value: client CPU saturated, missed open-loop target, errors.
	Warnings []string `json:"warnings,omitempty"`
}

// Metric returns the named metric, or nil.
func (s *Series) Metric(name string) *Metric {
	for i := range s.Metrics {
		if s.Metrics[i].Name == name {
			return &s.Metrics[i]
		}
	}
	return nil
}

// Headlines returns the metrics marked Headline, in order.
func (s *Series) Headlines() []Metric {
	var out []Metric
	for _, m := range s.Metrics {
		if m.Headline {
			out = append(out, m)
		}
	}
	return out
}

// percentiles taken per sample and from the merged histogram.
var latencyPercentiles = []struct {
	name string
	q    float64
	from func(*stats.Latency) float64
}{
	{MetricP50, 50, func(l *stats.Latency) float64 { return l.P50Us }},
	{MetricP90, 90, func(l *stats.Latency) float64 { return l.P90Us }},
	{MetricP99, 99, func(l *stats.Latency) float64 { return l.P99Us }},
	{MetricP999, 99.9, func(l *stats.Latency) float64 { return l.P999Us }},
}

// Metrics turns a Result into metric series, one value per sample. A sample
// counts as failed when it has an error or no result of a known kind. The
// kind of a sample decides its metrics: add a case to sampleKind and a
// collect function for a new kind (DNS).
func Metrics(r Result) (Series, error) {
	var s Series
	c := &collector{byName: map[string]int{}}
	var lats, uncorrected []*stats.Latency
	saturated, missed, errs := 0, 0, int64(0)
	missedMax, firstErr, gapMax := 0.0, "", 0.0
	for _, smp := range r.Samples {
		s.Samples++
		kind := sampleKind(smp)
		if kind == "" {
			s.Failed++
			if s.FirstError == "" {
				s.FirstError = smp.Error
				if s.FirstError == "" {
					s.FirstError = "sample has no result"
				}
			}
			continue
		}
		if s.Kind == "" {
			s.Kind = kind
		}
		var lat *stats.Latency
		switch kind {
		case KindStream:
			collectStream(c, smp)
			if e := smp.Engine; e.Errors > 0 {
				errs += e.Errors
				if firstErr == "" {
					firstErr = e.ErrorMsg
				}
			}
		case KindRR:
			lat = smp.Engine.Latency
			collectRR(c, r.Test, smp)
			if smp.Engine.PortExhaustion {
				s.PortExhausted++
			}
			if smp.Engine.Stalled {
				s.Stalled++
				gapMax = max(gapMax, smp.Engine.LongestGapSec)
			}
			if e := smp.Engine; e.Errors > 0 {
				errs += e.Errors
				if firstErr == "" {
					firstErr = e.ErrorMsg
				}
			}
		case KindHTTP, KindDNS:
			ld, _ := asLoad(smp)
			lat = ld.latency
			if kind == KindHTTP {
				collectHTTP(c, smp, ld)
			} else {
				collectDNS(c, smp, ld)
			}
			if ld.targetQPS > 0 && ld.uncorrected != nil {
				uncorrected = append(uncorrected, ld.uncorrected)
			}
			if ld.saturated {
				saturated++
			}
			if ld.missed {
				missed++
				missedMax = max(missedMax, ld.missedBy)
			}
			if ld.errors > 0 {
				errs += ld.errors
				if firstErr == "" {
					firstErr = ld.firstError
				}
			}
		}
		collectDatapath(c, kind, smp)
		if lat != nil {
			if err := c.latency(lat, smp.Round); err != nil {
				return s, fmt.Errorf("%s %s round %d: %w", r.Test, r.Placement.Name(), smp.Round, err)
			}
			lats = append(lats, lat)
		}
	}
	ok := s.Samples - s.Failed
	s.ClientSaturated, s.MissedTarget = saturated, missed
	if saturated > 0 {
		s.Warnings = append(s.Warnings, fmt.Sprintf("client CPU saturated in %d of %d samples: the rate may be the client's limit, not the datapath's", saturated, ok))
	}
	if missed > 0 {
		s.Warnings = append(s.Warnings, fmt.Sprintf("missed the target rate in %d of %d samples (by up to %.1f%%): latency is measured at a lower rate than asked", missed, ok, missedMax))
	}
	if s.PortExhausted > 0 {
		s.Warnings = append(s.Warnings, fmt.Sprintf("client ran out of local ports (EADDRNOTAVAIL) in %d of %d samples: the rate measures ephemeral-port exhaustion, not the datapath", s.PortExhausted, ok))
	}
	if s.Stalled > 0 {
		s.Warnings = append(s.Warnings, fmt.Sprintf("stalled in %d of %d samples: a flow completed no transaction for up to %.1f s", s.Stalled, ok, gapMax))
	}
	if errs > 0 {
		w := fmt.Sprintf("%d errors in successful samples", errs)
		if firstErr != "" {
			w += " (first: " + firstErr + ")"
		}
		s.Warnings = append(s.Warnings, w)
	}
	s.Metrics = c.metrics
	slices.SortStableFunc(s.Metrics, func(a, b Metric) int { return rank(a.Name) - rank(b.Name) })
	for i := range s.Metrics {
		s.Metrics[i].Display = Median(s.Metrics[i].Values)
	}
	if len(lats) > 0 {
		merged, err := stats.Merge(lats...)
		if err != nil {
			return s, fmt.Errorf("%s %s: %w", r.Test, r.Placement.Name(), err)
		}
		if merged.Count > 0 {
			s.Latency = merged
			for _, p := range latencyPercentiles {
				s.setMerged(p.name, p.from(merged))
			}
			s.setMerged(MetricMin, merged.MinUs)
			s.setMerged(MetricMean, merged.MeanUs)
			s.setMerged(MetricMax, merged.MaxUs)
		}
	}
	if len(uncorrected) > 0 {
		merged, err := stats.Merge(uncorrected...)
		if err != nil {
			return s, fmt.Errorf("%s %s: %w", r.Test, r.Placement.Name(), err)
		}
		if merged.Count > 0 {
			s.setMerged(MetricP99Uncorr, merged.P99Us)
		}
	}
	return s, nil
}

func (s *Series) setMerged(name string, v float64) {
	if m := s.Metric(name); m != nil {
		m.Display, m.Merged = v, true
	}
}

// metricOrder is the order reports list metrics in: the headline, then
// latency, then the rest; names not listed go last, as first seen.
var metricOrder = []string{
	MetricThroughput, MetricOffered, MetricLoss, MetricRate, MetricRPS, MetricQPS, MetricMissedBy, MetricErrors, MetricDNSLoss,
	MetricP50, MetricP90, MetricP99, MetricP999, MetricMin, MetricMean, MetricMax, MetricP99Uncorr,
	MetricClientCPUGB, MetricServerCPUGB, MetricClientCPUOp, MetricServerCPUOp,
	MetricClientCPUReq, MetricServerCPUReq, MetricClientCPUQuery, MetricServerCPUQuery, MetricClientUtil,
}

func rank(name string) int {
	if i := slices.Index(metricOrder, name); i >= 0 {
		return i
	}
	if i := slices.Index(datapathMetricOrder, name); i >= 0 {
		return len(metricOrder) + i
	}
	return len(metricOrder) + len(datapathMetricOrder)
}

// sampleKind tells which kind of result a sample carries; "" means failed.
func sampleKind(s Sample) string {
	switch {
	case s.Error != "":
		return ""
	case s.HTTP != nil:
		return KindHTTP
	case s.DNS != nil:
		return KindDNS
	case s.Engine != nil && s.Engine.Latency != nil && s.Engine.Transactions > 0:
		return KindRR
	case s.Engine != nil:
		return KindStream
	}
	return ""
}

// collector gathers per-sample values into metrics in first-seen order.
type collector struct {
	metrics []Metric
	byName  map[string]int
}

func (c *collector) add(name, unit string, better Better, headline bool, round int, v float64) *Metric {
	i, ok := c.byName[name]
	if !ok {
		i = len(c.metrics)
		c.byName[name] = i
		c.metrics = append(c.metrics, Metric{Name: name, Unit: unit, Better: better, Headline: headline})
	}
	m := &c.metrics[i]
	if !math.IsNaN(v) && !math.IsInf(v, 0) {
		m.Values = append(m.Values, v)
		m.Rounds = append(m.Rounds, round)
	}
	return m
}

// latency adds a sample's own percentiles, read from its histogram (from
// the summary fields when it carries none).
func (c *collector) latency(l *stats.Latency, round int) error {
	h, err := l.Decode()
	if err != nil {
		return err
	}
	has := h.TotalCount() > 0
	for _, p := range latencyPercentiles {
		v := p.from(l)
		if has {
			v = float64(h.ValueAtQuantile(p.q)) / 1e3
		}
		c.add(p.name, "µs", LowerIsBetter, p.name == MetricP99, round, v)
	}
	minV, meanV, maxV := l.MinUs, l.MeanUs, l.MaxUs
	if has {
		minV, meanV, maxV = float64(h.Min())/1e3, h.Mean()/1e3, float64(h.Max())/1e3
	}
	c.add(MetricMin, "µs", Info, false, round, minV)
	c.add(MetricMean, "µs", Info, false, round, meanV)
	c.add(MetricMax, "µs", Info, false, round, maxV)
	return nil
}

// p99 of one distribution, from its histogram when it carries one.
func p99(l *stats.Latency) float64 {
	if h, err := l.Decode(); err == nil && h.TotalCount() > 0 {
		return float64(h.ValueAtQuantile(99)) / 1e3
	}
	return l.P99Us
}

// measuredShare scales a sample's cgroup CPU, which spans the whole sample
// (warmup and setup too), to the measured interval, assuming steady load;
// 0 when the CPU or the interval is unknown.
func measuredShare(s Sample, seconds float64) float64 {
	if s.ClientCPUSec <= 0 && s.ServerCPUSec <= 0 {
		return 0
	}
	wall := s.End.Sub(s.Start).Seconds()
	if wall <= 0 || seconds <= 0 {
		return 0
	}
	return min(seconds/wall, 1)
}

func collectStream(c *collector, s Sample) {
	e := s.Engine
	c.add(MetricThroughput, "Gbit/s", HigherIsBetter, true, s.Round, e.ThroughputBitsSec/1e9)
	if e.PacketsSent > 0 {
		c.add(MetricOffered, "Gbit/s", Info, false, s.Round, e.OfferedBitsSec/1e9)
		c.add(MetricLoss, "%", LowerIsBetter, false, s.Round, e.LossPercent).Complement = "delivered share"
	}
	if f := measuredShare(s, e.Seconds); f > 0 && e.BytesReceived > 0 {
		gb := float64(e.BytesReceived) / 1e9
		c.add(MetricClientCPUGB, "s", LowerIsBetter, false, s.Round, s.ClientCPUSec*f/gb)
		c.add(MetricServerCPUGB, "s", LowerIsBetter, false, s.Round, s.ServerCPUSec*f/gb)
	}
}

func collectRR(c *collector, test string, s Sample) {
	e := s.Engine
	unit := "trans/s"
	if e.Test == "TCP_CRR" || test == "TCP_CRR" {
		unit = "conn/s"
	}
	c.add(MetricRate, unit, HigherIsBetter, true, s.Round, e.RatePerSec)
	if f := measuredShare(s, e.Seconds); f > 0 {
		ops := float64(e.Transactions)
		c.add(MetricClientCPUOp, "µs", LowerIsBetter, false, s.Round, s.ClientCPUSec*f*1e6/ops)
		c.add(MetricServerCPUOp, "µs", LowerIsBetter, false, s.Round, s.ServerCPUSec*f*1e6/ops)
	}
}

// collectHTTP: at a fixed QPS the rate is set by the plan, so the headline
// is latency alone and the shortfall is a metric; at max rate, requests/s
// leads.
func collectHTTP(c *collector, s Sample, ld loadSample) {
	collectLoad(c, s, ld, MetricRPS, "req/s", MetricClientCPUReq, MetricServerCPUReq)
	h := s.HTTP
	if n := h.Requests + h.Errors.Total; n > 0 {
		c.add(MetricErrors, "%", LowerIsBetter, false, s.Round, 100*float64(h.Errors.Total)/float64(n)).Complement = "success share"
	}
}

// collectDNS mirrors collectHTTP: queries answered per second lead at max
// rate (the server's capacity), latency alone at a fixed rate; lost
// queries (timeouts) are judged on the answered share.
func collectDNS(c *collector, s Sample, ld loadSample) {
	collectLoad(c, s, ld, MetricQPS, "queries/s", MetricClientCPUQuery, MetricServerCPUQuery)
	c.add(MetricDNSLoss, "%", LowerIsBetter, false, s.Round, s.DNS.LossPercent).Complement = "answered share"
}

// collectLoad adds what HTTP and DNS samples have in common: the rate (the
// headline only at max rate), at a fixed rate the shortfall and the
// uncorrected p99, the client's CPU use and the CPU per answered request.
func collectLoad(c *collector, s Sample, ld loadSample, rateName, rateUnit, clientCPU, serverCPU string) {
	openLoop := ld.targetQPS > 0
	c.add(rateName, rateUnit, HigherIsBetter, !openLoop, s.Round, ld.rate)
	if openLoop {
		c.add(MetricMissedBy, "%", LowerIsBetter, false, s.Round, ld.missedBy).Complement = "achieved share of the target rate"
		if l := ld.uncorrected; l != nil {
			c.add(MetricP99Uncorr, "µs", Info, false, s.Round, p99(l))
		}
	}
	if ld.cpus > 0 {
		c.add(MetricClientUtil, "%", Info, false, s.Round, 100*ld.util)
	}
	if f := measuredShare(s, ld.seconds); f > 0 && ld.ops > 0 {
		ops := float64(ld.ops)
		c.add(clientCPU, "µs", LowerIsBetter, false, s.Round, s.ClientCPUSec*f*1e6/ops)
		c.add(serverCPU, "µs", LowerIsBetter, false, s.Round, s.ServerCPUSec*f*1e6/ops)
	}
}
