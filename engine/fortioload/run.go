package fortioload

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"fortio.org/fortio/fhttp"
	"fortio.org/fortio/periodic"
	"fortio.org/log"

	"github.com/cnibench/cnibench/engine/internal/cpuuse"
	"github.com/cnibench/cnibench/engine/internal/window"
)

// What fortio computes in its own summary: `fortio load`'s default
// percentiles, and a 1 µs resolution for its buckets (its default, 1 ms,
// puts a lab's sub-millisecond latencies in one bucket).
var (
	percentiles = []float64{50, 75, 90, 99, 99.9}
	resolution  = 1e-6
)

// Run runs fortio's HTTP runner against o's target: o.Warmup first as a
// run of its own whose counts are dropped (fortio's runner has no warm-up
// time, only a request per connection), then o.Duration measured.
// Failed requests are counted in the result, never returned, so a server
// that is down gives a result with only errors (the kind's Check fails
// that sample); an error is a run fortio could not start. Cancelling ctx
// aborts fortio's runner and returns an error wrapping ctx.Err().
func Run(ctx context.Context, o Options) (*Result, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	quietFortioLogs()
	if o.Warmup > 0 {
		if _, err := runOnce(ctx, o, time.Duration(o.Warmup)); err != nil {
			return nil, err
		}
	}
	m, err := runOnce(ctx, o, time.Duration(o.Duration))
	if err != nil {
		return nil, err
	}
	return m.result(o)
}

// measured is one fortio run: fortio's results, our recorder's, and the
// wall time and process CPU around it.
type measured struct {
	fortio *fhttp.HTTPRunnerResults
	rec    *recorder
	win    window.Window
}

// runOnce is one fhttp.RunHTTPTest of duration d, as `fortio load -c N
// -qps Q -t d [-keepalive=false]` runs it, with ctx wired to its aborter.
func runOnce(ctx context.Context, o Options, d time.Duration) (measured, error) {
	m := measured{rec: newRecorder(o.Connections)}
	qps := o.QPS
	if qps == 0 {
		qps = -1 // fortio's max rate; its 0 means its default of 8 qps
	}
	aborter := periodic.NewAborter()
	ro := &fhttp.HTTPRunnerOptions{
		RunnerOptions: periodic.RunnerOptions{QPS: qps, Duration: d, NumThreads: o.Connections,
			Percentiles: percentiles, Resolution: resolution, Out: io.Discard, Stop: aborter, AccessLogger: m.rec},
		HTTPOptions: fhttp.HTTPOptions{URL: o.URL(), DisableKeepAlive: !o.KeepAlive, HTTPReqTimeOut: time.Duration(o.Timeout)},
		// A failed first request per connection is counted like any
		// other, as in the measured run, instead of ending the run.
		AllowInitialErrors: true,
	}
	stop := context.AfterFunc(ctx, func() { aborter.Abort(false) })
	defer stop()
	m.win.CPU0, m.win.Start = cpuuse.Process(), time.Now()
	res, err := fhttp.RunHTTPTest(ro)
	m.win.CPU1, m.win.End = cpuuse.Process(), time.Now()
	switch {
	case ctx.Err() != nil:
		return m, fmt.Errorf("fortio %s: %w", o.URL(), ctx.Err())
	case err != nil:
		return m, fmt.Errorf("fortio %s: %v", o.URL(), err)
	case res.Error:
		return m, fmt.Errorf("fortio %s: %s", o.URL(), res.Message)
	}
	m.fortio = res
	return m, nil
}

var quietOnce sync.Once

// quietFortioLogs keeps fortio's logger to critical messages: it logs
// every failed connect at error level, which against a server that is
// down is thousands of lines a second on the agent's output; failures
// are counted in the result instead.
func quietFortioLogs() {
	quietOnce.Do(func() { log.SetLogLevelQuiet(log.Critical) })
}
