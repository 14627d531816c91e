package httpload

import (
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// Timeline bucketing: a bucket is timelineMinBucket or the measured
// interval / timelineMaxBuckets, whichever is longer, so a report can
// plot the rate and p99 against what happened meanwhile (a churn's syncs)
// without the timeline outgrowing the sample.
const (
	timelineMinBucket  = 250 * time.Millisecond
	timelineMaxBuckets = 60
	// Per-bucket histograms are coarser than the sample's (2 significant
	// digits, 1 µs to 60 s): a p99 per bucket, not exact merging.
	tlMinNs, tlMaxNs, tlSigFigs = 1000, int64(60 * time.Second), 2
)

// timeline is one event loop's buckets; only its loop writes them.
type timeline struct {
	bucket   int64
	requests []int64
	errors   []int64
	hists    []*hdr.Histogram
}

func timelineBucket(d time.Duration) time.Duration {
	return max(timelineMinBucket, (d+timelineMaxBuckets-1)/timelineMaxBuckets)
}

func newTimeline(d time.Duration) *timeline {
	b := timelineBucket(d)
	n := int((d + b - 1) / b)
	t := &timeline{bucket: int64(b), requests: make([]int64, n), errors: make([]int64, n), hists: make([]*hdr.Histogram, n)}
	return t
}

// index is the bucket of a time offset into the measured interval.
func (t *timeline) index(sinceStart int64) int {
	return min(max(int(sinceStart/t.bucket), 0), len(t.requests)-1)
}

func (t *timeline) request(sinceStart int64, latency time.Duration) {
	i := t.index(sinceStart)
	t.requests[i]++
	h := t.hists[i]
	if h == nil {
		h = hdr.New(tlMinNs, tlMaxNs, tlSigFigs)
		t.hists[i] = h
	}
	_ = h.RecordValue(min(max(int64(latency), tlMinNs), tlMaxNs))
}

func (t *timeline) failure(sinceStart int64) { t.errors[t.index(sinceStart)]++ }

// mergeTimelines is the loops' buckets together.
func mergeTimelines(ts []*timeline) *Timeline {
	if len(ts) == 0 {
		return nil
	}
	n := len(ts[0].requests)
	out := &Timeline{BucketMs: float64(ts[0].bucket) / 1e6, Requests: make([]int64, n), Errors: make([]int64, n), P99Ms: make([]float64, n)}
	for i := range n {
		var h *hdr.Histogram
		for _, t := range ts {
			out.Requests[i] += t.requests[i]
			out.Errors[i] += t.errors[i]
			if t.hists[i] != nil {
				if h == nil {
					h = hdr.New(tlMinNs, tlMaxNs, tlSigFigs)
				}
				h.Merge(t.hists[i])
			}
		}
		if h != nil {
			out.P99Ms[i] = float64(h.ValueAtQuantile(99)) / 1e6
		}
	}
	return out
}
