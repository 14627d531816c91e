package report

import (
	"fmt"
	"math"
	"slices"

	"github.com/cnibench/cnibench/engine/httpload/httpapi"
	"github.com/cnibench/cnibench/results"
)

// ChurnTimeline is one churned HTTP sample against its twin's in the same
// round, bucket by bucket: the request rate and p99 with and without
// churn, and each change of the churn at the time it was made with its
// programming latency, so a dip or a p99 spike can be laid beside the
// syncs that caused it.
type ChurnTimeline struct {
	Test     string    `json:"test"`
	Round    int       `json:"round"`
	BucketMs float64   `json:"bucket_ms"`
	RateWith []float64 `json:"rate_with"` // requests/s per bucket
	RateNo   []float64 `json:"rate_without"`
	P99With  []float64 `json:"p99_with_ms"`
	P99No    []float64 `json:"p99_without_ms"`
	// ChangesS and LatencyMs: each change made during the measured
	// interval, in seconds from its start, and its programming latency.
	ChangesS  []float64 `json:"changes_s"`
	LatencyMs []float64 `json:"latency_ms"`
}

// timelineTests are the tests a churn timeline is drawn from, in order of
// preference: short connections feel a sync's stall first.
var timelineTests = []string{"HTTP_RPS_SHORT_C64", "HTTP_RPS_C64"}

// churnTimeline finds the last round in which both the churned scenario
// and its twin have a timeline for the first test of timelineTests that
// has one.
func churnTimeline(run *results.Run, churned, twin string) *ChurnTimeline {
	for _, test := range timelineTests {
		with, without := sampleOf(run, churned, test), sampleOf(run, twin, test)
		for round := len(with); round >= 1; round-- {
			w, n := with[round], without[round]
			if timelineOf(w) == nil || timelineOf(n) == nil || w.Churn == nil {
				continue
			}
			return buildTimeline(test, round, w, n)
		}
	}
	return nil
}

// sampleOf maps round → the scenario's sample of test (nil where none).
func sampleOf(run *results.Run, scenario, test string) map[int]*results.Sample {
	out := map[int]*results.Sample{}
	for i := range run.Results {
		r := &run.Results[i]
		if r.Scenario != scenario || r.Test != test {
			continue
		}
		for j := range r.Samples {
			s := &r.Samples[j]
			if s.Error == "" {
				out[s.Round] = s
			}
		}
	}
	return out
}

// timelineOf is an HTTP sample's timeline (nil for none).
func timelineOf(s *results.Sample) *httpapi.Timeline {
	if s == nil {
		return nil
	}
	if h, ok := s.Result.(*httpapi.Result); ok && h != nil {
		return h.Timeline
	}
	return nil
}

func buildTimeline(test string, round int, w, n *results.Sample) *ChurnTimeline {
	tw, tn := timelineOf(w), timelineOf(n)
	t := &ChurnTimeline{Test: test, Round: round, BucketMs: tw.BucketMs}
	rate := func(tl *httpapi.Timeline) []float64 {
		out := make([]float64, len(tl.Requests))
		for i, r := range tl.Requests {
			out[i] = float64(r) / (tl.BucketMs / 1000)
		}
		return out
	}
	t.RateWith, t.RateNo, t.P99With, t.P99No = rate(tw), rate(tn), tw.P99Ms, tn.P99Ms
	c := w.Churn
	span := float64(len(tw.Requests)) * tw.BucketMs / 1000
	for i, at := range c.ChangesAtMs {
		if i >= len(c.LatenciesMs) {
			break
		}
		s := (float64(c.Start.Sub(w.Result.(*httpapi.Result).Start))/1e6 + at) / 1000
		if s >= 0 && s <= span {
			t.ChangesS = append(t.ChangesS, s)
			t.LatencyMs = append(t.LatencyMs, c.LatenciesMs[i])
		}
	}
	return t
}

// line is the timeline's one-line summary for the Markdown report.
func (t *ChurnTimeline) line() string {
	lo := func(v []float64) float64 { return slices.Min(v) }
	hi := func(v []float64) float64 { return slices.Max(v) }
	return fmt.Sprintf("timeline of round %d's %s in %s ms buckets (charts in report.html): request rate lowest %s/s with churn, %s/s without; p99 highest %s ms with churn, %s ms without; %d changes made in the measured interval",
		t.Round, t.Test, fmtNum(t.BucketMs), fmtNum(lo(t.RateWith)), fmtNum(lo(t.RateNo)), fmtNum(hi(t.P99With)), fmtNum(hi(t.P99No)), len(t.ChangesS))
}

// charts are the timeline's three charts against seconds into the sample.
func (t *ChurnTimeline) charts(churned, twin string) []lineChart {
	mid := func(n int) []float64 {
		x := make([]float64, n)
		for i := range x {
			x[i] = (float64(i) + 0.5) * t.BucketMs / 1000
		}
		return x
	}
	xs := timeAxis(float64(max(len(t.RateWith), len(t.RateNo))) * t.BucketMs / 1000)
	rate := drawLinesOn(xs, fmt.Sprintf("%s requests/s per %s ms, round %d", t.Test, fmtNum(t.BucketMs), t.Round), []string{twin, churned},
		[][2][]float64{{mid(len(t.RateNo)), t.RateNo}, {mid(len(t.RateWith)), t.RateWith}}, false, fmtNum)
	p99 := drawLinesOn(xs, fmt.Sprintf("%s p99 (ms) per %s ms, round %d", t.Test, fmtNum(t.BucketMs), t.Round), []string{twin, churned},
		[][2][]float64{{mid(len(t.P99No)), t.P99No}, {mid(len(t.P99With)), t.P99With}}, false, msText)
	lat := drawLinesOn(xs, "Programming latency (ms) of each change, at the time it was made", []string{churned + " changes"},
		[][2][]float64{{t.ChangesS, t.LatencyMs}}, false, msText)
	for i := range lat.Series {
		// The churned scenario's colour, as in the two charts above.
		lat.Series[i].NoLine = true
		lat.Series[i].Colour = colour(1)
		for j := range lat.Series[i].Dots {
			lat.Series[i].Dots[j].Colour = colour(1)
		}
	}
	return []lineChart{rate, p99, lat}
}

// timeAxis is an x axis of seconds from 0 to span.
func timeAxis(span float64) xAxis {
	return xAxis{Max: math.Max(span, 1e-3), Label: "seconds into the measured interval", Tick: func(v float64) string { return fmtNum(math.Round(v*10) / 10) }}
}
