package kinds

import (
	"errors"
	"fmt"
	"time"
)

// MergeWith adapts an engine's typed merge (of *R results) to Kind.Merge:
// every result must be a non-nil *R, and there must be at least one.
func MergeWith[R any](merge func([]*R) (*R, error)) func([]any) (any, error) {
	return func(results []any) (any, error) {
		if len(results) == 0 {
			return nil, errors.New("merge: no result")
		}
		typed := make([]*R, len(results))
		for i, r := range results {
			x, ok := r.(*R)
			if !ok || x == nil {
				return nil, fmt.Errorf("merge: result %d is %T, want %T", i, r, x)
			}
			typed[i] = x
		}
		out, err := merge(typed)
		if err != nil {
			return nil, err
		}
		return out, nil
	}
}

// Span is the measured interval of results taken at once: the earliest
// start, the latest end, and the longest pair's Seconds (the pairs run for
// the same duration, so it is that duration, not the span's slack).
func Span(rs []*RunnerResults) RunnerResults {
	var out RunnerResults
	for i, r := range rs {
		if i == 0 || r.Start.Before(out.Start) {
			out.Start = r.Start
		}
		if r.End.After(out.End) {
			out.End = r.End
		}
		out.Seconds = max(out.Seconds, r.Seconds)
	}
	return out
}

// Overlap is the share of a's interval that b's covers, 0..1 (0 for an
// empty a): how well two pairs measured at once.
func Overlap(aStart, aEnd, bStart, bEnd time.Time) float64 {
	length := aEnd.Sub(aStart)
	if length <= 0 {
		return 0
	}
	lo, hi := aStart, aEnd
	if bStart.After(lo) {
		lo = bStart
	}
	if bEnd.Before(hi) {
		hi = bEnd
	}
	if !hi.After(lo) {
		return 0
	}
	return float64(hi.Sub(lo)) / float64(length)
}
