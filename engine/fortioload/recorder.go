package fortioload

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"fortio.org/fortio/periodic"
	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/cnibench/cnibench/stats"
)

// recorder is fortio's access logger for one run (periodic.AccessLogger,
// called around every call with the duration fortio records): it keeps
// the durations of complete responses exactly, in our histogram, where
// fortio keeps them in coarse buckets, and the first failure's cause.
// Each fortio thread reports from its own goroutine into its own
// histogram, so recording takes no lock.
type recorder struct {
	hists  []*hdr.Histogram // by fortio thread id
	failed atomic.Bool
	mu     sync.Mutex
	first  string
}

var _ periodic.AccessLogger = (*recorder)(nil)

func newRecorder(threads int) *recorder {
	r := &recorder{hists: make([]*hdr.Histogram, threads)}
	for i := range r.hists {
		r.hists[i] = stats.NewHistogram()
	}
	return r
}

func (r *recorder) Start(ctx context.Context, _ periodic.ThreadID, _ int64, _ time.Time) context.Context {
	return ctx
}

// Report takes one call: details is fortio's status code, -1 for a socket
// error (no response).
func (r *recorder) Report(_ context.Context, id periodic.ThreadID, _ int64, _ time.Time, seconds float64, _ bool, details string) {
	code, err := strconv.Atoi(details)
	if err != nil || code < 0 {
		r.fail(socketError)
		return
	}
	stats.Record(r.hists[id], time.Duration(seconds*float64(time.Second)))
	if !is2xx(code) {
		r.fail("HTTP " + details)
	}
}

func (r *recorder) Info() string { return "cnibench latency recorder" }

// socketError is what fortio's -1 stands for; fortio logs the cause but
// does not return it.
const socketError = "socket error (fortio code -1: connect failed, connection reset or closed early, or timed out)"

func (r *recorder) fail(why string) {
	if r.failed.Load() {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.first == "" {
		r.first = why
		r.failed.Store(true)
	}
}

// firstFailure is the first failure's cause, "" without one.
func (r *recorder) firstFailure() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.first
}

// latency merges the threads' histograms.
func (r *recorder) latency() (*stats.Latency, error) {
	h := stats.NewHistogram()
	for _, t := range r.hists {
		h.Merge(t)
	}
	return stats.Summarize(h)
}

func is2xx(code int) bool { return code >= 200 && code <= 299 }
