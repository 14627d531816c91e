package dnsload

import (
	"context"
	"fmt"
	"net/netip"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cnibench/cnibench/engine/dnsload/dnsapi"
	"github.com/cnibench/cnibench/engine/internal/cpuuse"
	"github.com/cnibench/cnibench/engine/internal/window"
	"github.com/cnibench/cnibench/engine/kinds"
	"github.com/cnibench/cnibench/stats"
)

// run is the state shared by the event loops of one Run. Times are
// nanoseconds since base (monotonic clock).
type run struct {
	o          Options
	addr       netip.AddrPort
	names      []string
	qs         *queries
	base       time.Time
	measFrom   int64
	measTo     int64
	timeout    int64
	timeoutMsg string

	stop  atomic.Bool
	loops []*loop
}

func (r *run) now() int64 { return int64(time.Since(r.base)) }

func (r *run) inWindow(t int64) bool { return t >= r.measFrom && t < r.measTo }

// Run validates o and queries the server: o.Warmup unmeasured, then
// o.Duration measured, with o.Outstanding queries spread over o.Threads
// event loops. One query is tried first, so a server that is down gives a
// one-line error at once; afterwards failures are counted in
// Result.Errors, not returned. Cancelling ctx stops every loop and
// returns an error wrapping ctx.Err() within milliseconds.
func Run(ctx context.Context, o Options) (*Result, error) {
	addr, err := o.ValidateAddr()
	if err != nil {
		return nil, err
	}
	names := o.QueryNames()
	qs, err := buildQueries(names)
	if err != nil {
		return nil, err
	}
	r := &run{o: o, addr: addr, names: names, qs: qs, timeout: int64(o.Timeout)}
	r.timeoutMsg = fmt.Sprintf("no response from %s within %s", addr, time.Duration(o.Timeout))

	// Probe: fail fast, in one line, when nothing answers.
	if _, err := exchange(ctx, addr, qs.packet(0), min(time.Duration(o.Timeout), 5*time.Second)); err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("dnsload %s: %w", addr, ctx.Err())
		}
		return nil, fmt.Errorf("dnsload: %w", err)
	}

	nloops := o.Threads
	if nloops == 0 {
		nloops = cpuuse.Usable()
	}
	nloops = min(nloops, o.Outstanding)
	for i := range nloops {
		k := o.Outstanding / nloops
		if i < o.Outstanding%nloops {
			k++
		}
		l, err := newLoop(r, i, nloops, k)
		if err != nil {
			window.CloseAll(r.loops)
			return nil, fmt.Errorf("dnsload: %v", err)
		}
		r.loops = append(r.loops, l)
	}

	r.base = time.Now()
	r.measFrom = int64(o.Warmup)
	r.measTo = r.measFrom + int64(o.Duration)
	w, err := window.Measure(ctx, r.base, time.Duration(o.Warmup), time.Duration(o.Duration), window.Of(&r.stop, r.loops), "dnsload "+addr.String())
	if err != nil {
		return nil, err
	}
	return r.result(w)
}

// result merges the loops' counters and histograms.
func (r *run) result(w window.Window) (*Result, error) {
	o := r.o
	res := &Result{
		Options: o, Address: r.addr.String(), Mode: "max-rate",
		RunnerResults: kinds.RunnerResults{Start: w.Start, End: w.End, Seconds: time.Duration(o.Duration).Seconds()},
		Outstanding:   o.Outstanding, Threads: len(r.loops), Names: r.qs.len(),
		Rcodes: map[string]int64{},
	}
	if o.QPS > 0 {
		res.Mode = "fixed-qps"
	}
	h, hu := stats.NewHistogram(), stats.NewHistogram()
	e := &res.Errors
	for _, l := range r.loops {
		res.Sent += l.counters.sent
		res.Responses += l.responses
		res.OK += l.ok
		res.BytesSent += l.bytesSent
		res.BytesReceived += l.bytesRecv
		for c, n := range l.rcodes {
			if n > 0 {
				res.Rcodes[rcodeName(c)] += n
			}
		}
		e.Add(l.errs) // Total is counted below, of the kinds that are errors
		h.Merge(l.hist)
		if l.histU != nil {
			hu.Merge(l.histU)
		}
	}
	e.Total = e.Timeout + e.Rcode + e.NoAnswer + e.Send
	res.QPS = float64(res.Responses) / res.Seconds
	if n := res.Responses + e.Timeout; n > 0 {
		res.LossPercent = 100 * float64(e.Timeout) / float64(n)
	}
	if o.QPS > 0 {
		res.OpenLoop = window.Achieved(res.QPS, o.QPS, dnsapi.MissedTargetRatio)
	}
	var err error
	if res.Latency, res.LatencyUncorrected, err = window.Latencies(h, hu, o.QPS > 0); err != nil {
		return nil, err
	}
	res.ClientCPU = w.CPU(dnsapi.SaturatedUtil)
	return res, nil
}

// sockaddr converts ap for unix.Connect.
func sockaddr(ap netip.AddrPort) unix.Sockaddr {
	if ap.Addr().Is4() {
		return &unix.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().As4()}
	}
	return &unix.SockaddrInet6{Port: int(ap.Port()), Addr: ap.Addr().As16()}
}
