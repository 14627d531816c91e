package results

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/cnibench/cnibench/engine/kinds"
	"github.com/cnibench/cnibench/stats"
)

// Better says which way a metric improves, and so whether it gets a verdict.
type Better = kinds.Better

const (
	HigherIsBetter = kinds.HigherIsBetter
	LowerIsBetter  = kinds.LowerIsBetter
	// Info metrics are shown but never judged: min and max latency are one
	// event each, the offered rate is a setting's outcome, not a quality.
	Info = kinds.Info
)

// Kinds of Result, from the kind of its samples: the names the engine
// kinds register (package kinds), for the callers that name one.
const (
	KindStream = "stream" // engine stream test: throughput (and UDP loss)
	KindRR     = "rr"     // engine request/response or connect/request/response
	KindHTTP   = "http"   // httpload
	KindDNS    = "dns"    // dnsload
)

// Metric names (defined with the kinds, which name their metrics).
const (
	MetricThroughput     = kinds.MetricThroughput
	MetricOffered        = kinds.MetricOffered
	MetricLoss           = kinds.MetricLoss
	MetricRate           = kinds.MetricRate
	MetricRPS            = kinds.MetricRPS
	MetricP50            = kinds.MetricP50
	MetricP90            = kinds.MetricP90
	MetricP99            = kinds.MetricP99
	MetricP999           = kinds.MetricP999
	MetricMin            = kinds.MetricMin
	MetricMean           = kinds.MetricMean
	MetricMax            = kinds.MetricMax
	MetricP99Uncorr      = kinds.MetricP99Uncorr
	MetricErrors         = kinds.MetricErrors
	MetricMissedBy       = kinds.MetricMissedBy
	MetricClientUtil     = kinds.MetricClientUtil
	MetricClientCPUOp    = kinds.MetricClientCPUOp
	MetricServerCPUOp    = kinds.MetricServerCPUOp
	MetricClientCPUGB    = kinds.MetricClientCPUGB
	MetricServerCPUGB    = kinds.MetricServerCPUGB
	MetricClientCPUReq   = kinds.MetricClientCPUReq
	MetricServerCPUReq   = kinds.MetricServerCPUReq
	MetricQPS            = kinds.MetricQPS
	MetricDNSLoss        = kinds.MetricDNSLoss
	MetricClientCPUQuery = kinds.MetricClientCPUQuery
	MetricServerCPUQuery = kinds.MetricServerCPUQuery
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
	// Display is the median of Values: for latency, the median over rounds
	// of each round's own percentile (never an average of percentiles).
	// The verdicts and the regression gate judge the same per-round
	// values, so a cell, its verdict and the gate show one statistic.
	Display float64 `json:"display"`
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
	// latency): the whole run's shape, for readers who want it; cells show
	// the median of per-round percentiles instead (Metric.Display).
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
// counts as failed when it has an error or no result of a registered kind;
// the kind of a sample (package kinds) reads its metrics.
func Metrics(r Result) (Series, error) {
	var s Series
	c := &collector{byName: map[string]int{}}
	var w warnings
	var lats []*stats.Latency
	for _, smp := range r.Samples {
		s.Samples++
		kind, ok := sampleKind(smp)
		if !ok {
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
			s.Kind = kind.Name
		}
		rd := kind.Read(r.Test, smp.Measured())
		c.reading(kind, smp, rd)
		w.add(rd)
		collectDatapath(c, kind.PerWork, smp, rd)
		if lat := rd.Latency; lat != nil {
			if err := c.latency(lat, smp.Round); err != nil {
				return s, fmt.Errorf("%s %s round %d: %w", r.Test, r.Placement.Name(), smp.Round, err)
			}
			lats = append(lats, lat)
		}
	}
	w.flag(&s)
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
		}
	}
	return s, nil
}

// warnings counts what makes successful samples suspect, over a Result.
type warnings struct {
	ok, saturated, missed, portExhausted, stalled int
	errs                                          int64
	missedMax, gapMax                             float64
	firstErr                                      string
}

func (w *warnings) add(rd kinds.Reading) {
	w.ok++
	if rd.Saturated {
		w.saturated++
	}
	if rd.Missed {
		w.missed++
		w.missedMax = max(w.missedMax, rd.MissedBy)
	}
	if rd.PortExhausted {
		w.portExhausted++
	}
	if rd.Stalled {
		w.stalled++
		w.gapMax = max(w.gapMax, rd.LongestGap)
	}
	if rd.Errors > 0 {
		w.errs += rd.Errors
		if w.firstErr == "" {
			w.firstErr = rd.FirstError
		}
	}
}

// flag sets the Series' counts and warnings.
func (w *warnings) flag(s *Series) {
	ok := w.ok
	s.ClientSaturated, s.MissedTarget = w.saturated, w.missed
	s.PortExhausted, s.Stalled = w.portExhausted, w.stalled
	if w.saturated > 0 {
		s.Warnings = append(s.Warnings, fmt.Sprintf("client CPU saturated in %d of %d samples: the rate may be the client's limit, not the datapath's", w.saturated, ok))
	}
	if w.missed > 0 {
		s.Warnings = append(s.Warnings, fmt.Sprintf("missed the target rate in %d of %d samples (by up to %.1f%%): latency is measured at a lower rate than asked", w.missed, ok, w.missedMax))
	}
	if s.PortExhausted > 0 {
		s.Warnings = append(s.Warnings, fmt.Sprintf("client ran out of local ports (EADDRNOTAVAIL) in %d of %d samples: the rate measures ephemeral-port exhaustion, not the datapath", s.PortExhausted, ok))
	}
	if s.Stalled > 0 {
		s.Warnings = append(s.Warnings, fmt.Sprintf("stalled in %d of %d samples: a flow completed no transaction for up to %.1f s", s.Stalled, ok, w.gapMax))
	}
	if w.errs > 0 {
		msg := fmt.Sprintf("%d errors in successful samples", w.errs)
		if w.firstErr != "" {
			msg += " (first: " + w.firstErr + ")"
		}
		s.Warnings = append(s.Warnings, msg)
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
	pinned := []string{kinds.PinnedTotal, kinds.PinnedSoftirq, kinds.PinnedUnattributed}
	for i, p := range pinned {
		if strings.HasPrefix(name, p+" CPU per ") {
			return len(metricOrder) + i
		}
	}
	if i := slices.Index(datapathMetricOrder, name); i >= 0 {
		return len(metricOrder) + len(pinned) + i
	}
	return len(metricOrder) + len(pinned) + len(datapathMetricOrder)
}

// sampleKind tells which registered kind a sample's result is of; false
// means the sample failed.
func sampleKind(s Sample) (kinds.Kind, bool) {
	if s.Error != "" {
		return kinds.Kind{}, false
	}
	return kinds.Of(s.Measured())
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

// reading adds a sample's own metric values and its client's and
// server's CPU per unit of work.
func (c *collector) reading(k kinds.Kind, s Sample, rd kinds.Reading) {
	for _, v := range rd.Values {
		m := c.add(v.Name, v.Unit, v.Better, v.Headline, s.Round, v.V)
		if v.Complement != "" {
			m.Complement = v.Complement
		}
	}
	if f := measuredShare(s, rd.Seconds); f > 0 && rd.Work > 0 && k.PerWork.Client != "" {
		per := func(sec float64) float64 { return sec * f * rd.Scale / rd.Work }
		c.add(k.PerWork.Client, k.PerWork.Unit, LowerIsBetter, false, s.Round, per(s.ClientCPUSec))
		c.add(k.PerWork.Server, k.PerWork.Unit, LowerIsBetter, false, s.Round, per(s.ServerCPUSec))
		if p := s.Pinned; p != nil && p.BusySec > 0 {
			c.add(k.PerWork.Pinned(kinds.PinnedTotal), k.PerWork.Unit, LowerIsBetter, false, s.Round, per(p.BusySec))
			c.add(k.PerWork.Pinned(kinds.PinnedSoftirq), k.PerWork.Unit, LowerIsBetter, false, s.Round, per(p.SoftirqSec))
			// Ticks against nanoseconds: a few ms either way, never below 0.
			c.add(k.PerWork.Pinned(kinds.PinnedUnattributed), k.PerWork.Unit, LowerIsBetter, false, s.Round,
				per(max(p.BusySec-s.ClientCPUSec-s.ServerCPUSec, 0)))
		}
	}
}
