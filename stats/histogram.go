// Package stats holds the latency histogram shared by every engine and the
// summaries derived from it. Histograms are kept encoded in results so that
// samples and rounds merge exactly: percentiles are never averaged.
package stats

import (
	"fmt"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// Histogram bounds: values are recorded in nanoseconds, from 1 ns to 100 s,
// with 3 significant digits (0.1% relative error, well under a microsecond
// for any latency below a millisecond).
const (
	minValueNs  = 1
	maxValueNs  = int64(100 * time.Second)
	sigFigures  = 3
	encodingVer = hdr.V2CompressedEncodingCookieBase
)

// NewHistogram returns an empty latency histogram in nanoseconds.
func NewHistogram() *hdr.Histogram { return hdr.New(minValueNs, maxValueNs, sigFigures) }

// Record adds one latency, clamping it into the histogram's range so that an
// outlier is counted at the top instead of being dropped.
func Record(h *hdr.Histogram, d time.Duration) {
	v := int64(d)
	if v < minValueNs {
		v = minValueNs
	}
	if v > maxValueNs {
		v = maxValueNs
	}
	_ = h.RecordValue(v)
}

// Latency is the JSON form of a latency distribution: the usual percentiles
// in microseconds for readers, and the encoded histogram for exact merging.
type Latency struct {
	Count     int64   `json:"count"`
	MinUs     float64 `json:"min_us"`
	MeanUs    float64 `json:"mean_us"`
	P50Us     float64 `json:"p50_us"`
	P90Us     float64 `json:"p90_us"`
	P99Us     float64 `json:"p99_us"`
	P999Us    float64 `json:"p99_9_us"`
	MaxUs     float64 `json:"max_us"`
	Histogram string  `json:"histogram"` // HdrHistogram V2 compressed, base64 (hdrhistogram-go Encode)
}

// Summarize turns a histogram into its JSON form.
func Summarize(h *hdr.Histogram) (*Latency, error) {
	enc, err := h.Encode(encodingVer)
	if err != nil {
		return nil, fmt.Errorf("encode histogram: %w", err)
	}
	us := func(ns int64) float64 { return float64(ns) / 1e3 }
	l := &Latency{Count: h.TotalCount(), Histogram: string(enc)}
	if l.Count > 0 {
		l.MinUs = us(h.Min())
		l.MeanUs = h.Mean() / 1e3
		l.P50Us = us(h.ValueAtQuantile(50))
		l.P90Us = us(h.ValueAtQuantile(90))
		l.P99Us = us(h.ValueAtQuantile(99))
		l.P999Us = us(h.ValueAtQuantile(99.9))
		l.MaxUs = us(h.Max())
	}
	return l, nil
}

// Decode returns the histogram carried by l.
func (l *Latency) Decode() (*hdr.Histogram, error) {
	if l == nil || l.Histogram == "" {
		return NewHistogram(), nil
	}
	h, err := hdr.Decode([]byte(l.Histogram))
	if err != nil {
		return nil, fmt.Errorf("decode histogram: %w", err)
	}
	return h, nil
}

// MergePresent merges the distributions that are there, skipping nil
// ones, and is nil when none is: the pairs' aggregate of a kind whose
// results may lack a latency (a failed or empty side).
func MergePresent(ls ...*Latency) (*Latency, error) {
	var have []*Latency
	for _, l := range ls {
		if l != nil {
			have = append(have, l)
		}
	}
	if len(have) == 0 {
		return nil, nil
	}
	return Merge(have...)
}

// Merge combines latency distributions exactly, by merging their histograms.
func Merge(ls ...*Latency) (*Latency, error) {
	total := NewHistogram()
	for _, l := range ls {
		h, err := l.Decode()
		if err != nil {
			return nil, err
		}
		if dropped := total.Merge(h); dropped > 0 {
			return nil, fmt.Errorf("merge histograms: %d values out of range", dropped)
		}
	}
	return Summarize(total)
}
