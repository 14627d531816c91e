package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/cnibench/cnibench/engine/internal/cpuuse"
)

// Client timeouts: how long a first connect or the server's final report may
// take before Run gives up (variables so tests can shorten them).
var (
	connectTimeout = 5 * time.Second
	finishTimeout  = 10 * time.Second
)

// engine is one test's client. flow runs on its own locked OS thread, calls
// rc.ready once its setup is done and then loops until the end of the
// measured interval. finish, if set, runs after every flow returned (UDP
// report); fill turns the flows' counters into the Result.
type engine struct {
	flow func(rc *runCtx, f *flow) error
	// hardStop: at the end of the interval shutdown() every socket rather
	// than let flows finish their current message (RR tests, where the
	// in-flight transaction does not count anyway).
	hardStop bool
	// netpoll: the flow uses Go's netpoller instead of a blocking socket on
	// a locked OS thread, so its goroutine must not be locked.
	netpoll bool
	finish  func(ctx context.Context, rc *runCtx) error
	fill    func(rc *runCtx, r *Result) error
}

var engines = map[Test]engine{
	TCPStream: {flow: tcpStreamFlow, netpoll: true, fill: fillTCPStream},
	UDPStream: {flow: udpStreamFlow, finish: udpStreamReport, fill: fillUDPStream},
	TCPRR:     {flow: tcpRRFlow, hardStop: true, fill: fillRR},
	UDPRR:     {flow: udpRRFlow, hardStop: true, fill: fillRR},
	TCPCRR:    {flow: tcpCRRFlow, hardStop: true, fill: fillRR},
}

// runCtx is shared by the flows of one Run. measStart and measEnd are set
// before go is closed and read-only afterwards.
type runCtx struct {
	o       Options
	ip      net.IP
	addr    string // host:port, for messages
	session uint64
	wait    waiter // how RR flows wait (Blocking or BusyPoll)
	// hardStop copies engine.hardStop: then I/O errors after stop are the
	// coordinator's shutdown, not failures.
	hardStop bool

	stop    atomic.Bool // end of interval or abort
	aborted atomic.Bool // ctx cancelled or a flow failed
	readyCh chan error
	goCh    chan struct{}

	measStart, measEnd time.Time
	flows              []flow

	// UDP_STREAM: the server's report.
	report udpReport
}

// flow holds one flow's socket set and counters; only its goroutine writes
// them until Run has waited for it.
type flow struct {
	id  int
	fds fdSet
	fd  int // UDP_STREAM: kept open for the report

	bytesSent, pktsSent int64
	srvBytes, srvNs     int64 // TCP_STREAM trailer
	trans, errors       int64
	errMsg              string
	causes              map[string]int64 // errors by errCause
	portExhausted       bool             // an EADDRNOTAVAIL was counted
	lastDone            time.Time        // last completed transaction
	longestGap          time.Duration    // longest time without one
	hist                *hdr.Histogram
	err                 error
}

// ready reports a flow's setup outcome and waits for the start signal; false
// means the flow must return (its setup failed or the run was aborted).
func (rc *runCtx) ready(err error) bool {
	rc.readyCh <- err
	if err != nil {
		return false
	}
	<-rc.goCh
	return !rc.aborted.Load()
}

// failed turns a flow's I/O error into its return value: errors caused by
// the end of the run are not failures.
func (rc *runCtx) failed(f *flow, what string, err error) error {
	if rc.aborted.Load() || (rc.hardStop && rc.stop.Load()) {
		return nil
	}
	return fmt.Errorf("%s: stream %d: %s %s: %w", rc.o.Test, f.id, what, rc.addr, err)
}

func (f *flow) noteError(err error) {
	f.errors++
	if f.causes == nil {
		f.causes = make(map[string]int64)
	}
	f.causes[errCause(err)]++
	if portExhausted(err) {
		f.portExhausted = true
	}
	if f.errMsg == "" {
		f.errMsg = err.Error()
	}
}

func (rc *runCtx) abort() {
	rc.aborted.Store(true)
	rc.stop.Store(true)
	for i := range rc.flows {
		rc.flows[i].fds.shutdown()
	}
}

// Run validates o and runs the client side of o.Test against o.Host:o.Port:
// o.Streams flows each on its own OS thread, o.Warmup unmeasured, then
// o.Duration measured. Cancelling ctx stops it within milliseconds and
// returns an error wrapping ctx.Err(). A flow that cannot connect, or whose
// connection breaks, fails the whole run: a partial benchmark would mislead.
func Run(ctx context.Context, o Options) (*Result, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	eng := engines[o.Test]
	spareP()
	ip, err := resolve(ctx, o.Host)
	if err != nil {
		return nil, fmt.Errorf("%s: resolve %s: %w", o.Test, o.Host, err)
	}
	rc := &runCtx{
		o:       o,
		ip:      ip,
		addr:    net.JoinHostPort(ip.String(), strconv.Itoa(o.Port)),
		session: rand.Uint64(),
		readyCh: make(chan error, o.Streams),
		goCh:    make(chan struct{}),
		flows:   make([]flow, o.Streams),
	}
	rc.wait = waiter{spin: o.Mode == BusyPoll, stop: &rc.stop}
	rc.hardStop = eng.hardStop

	var wg sync.WaitGroup
	for i := range rc.flows {
		f := &rc.flows[i]
		f.id = i
		f.fd = -1
		wg.Add(1)
		go func() {
			defer wg.Done()
			if !eng.netpoll {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
			}
			f.err = eng.flow(rc, f)
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	defer func() {
		for i := range rc.flows {
			rc.flows[i].fds.closeAll()
		}
	}()
	// fail stops every flow and returns err once they have all exited, so
	// nothing outlives Run.
	fail := func(err error) (*Result, error) {
		rc.abort()
		select {
		case <-rc.goCh:
		default:
			close(rc.goCh)
		}
		<-done
		return nil, err
	}
	ctxErr := func() error { return fmt.Errorf("%s %s: %w", o.Test, rc.addr, ctx.Err()) }

	// Setup: every flow connected (or the first failure).
	for range o.Streams {
		select {
		case err := <-rc.readyCh:
			if err != nil {
				return fail(err)
			}
		case <-ctx.Done():
			return fail(ctxErr())
		}
	}
	t0 := time.Now()
	rc.measStart = t0.Add(time.Duration(o.Warmup))
	rc.measEnd = rc.measStart.Add(time.Duration(o.Duration))
	close(rc.goCh)

	sleepUntil := func(t time.Time) bool {
		timer := time.NewTimer(time.Until(t))
		defer timer.Stop()
		select {
		case <-timer.C:
			return true
		case <-ctx.Done():
			return false
		case <-done: // every flow failed early
			return true
		}
	}
	if !sleepUntil(rc.measStart) {
		return fail(ctxErr())
	}
	cpu0 := cpuuse.Process()
	if !sleepUntil(rc.measEnd) {
		return fail(ctxErr())
	}
	cpu1 := cpuuse.Process()
	rc.stop.Store(true)
	if eng.hardStop {
		for i := range rc.flows {
			rc.flows[i].fds.shutdown()
		}
	}
	timer := time.NewTimer(finishTimeout)
	defer timer.Stop()
	select {
	case <-done:
	case <-ctx.Done():
		return fail(ctxErr())
	case <-timer.C:
		return fail(fmt.Errorf("%s: %s: streams did not finish within %s of the end of the test", o.Test, rc.addr, finishTimeout))
	}
	for i := range rc.flows {
		if err := rc.flows[i].err; err != nil {
			return nil, err
		}
	}
	if eng.finish != nil {
		if err := eng.finish(ctx, rc); err != nil {
			if ctx.Err() != nil {
				return nil, ctxErr()
			}
			return nil, err
		}
	}

	r := &Result{
		Test:             o.Test,
		Options:          o,
		Start:            rc.measStart,
		End:              rc.measEnd,
		Seconds:          rc.measEnd.Sub(rc.measStart).Seconds(),
		Mode:             Blocking,
		Streams:          o.Streams,
		ClientCPUUserSec: (cpu1.User - cpu0.User).Seconds(),
		ClientCPUSysSec:  (cpu1.Sys - cpu0.Sys).Seconds(),
	}
	r.Start, r.End = r.Start.Round(0), r.End.Round(0) // wall clock only, for JSON
	for i := range rc.flows {
		f := &rc.flows[i]
		r.Errors += f.errors
		if r.ErrorMsg == "" && f.errMsg != "" {
			r.ErrorMsg = fmt.Sprintf("stream %d: %s", f.id, f.errMsg)
		}
		for c, n := range f.causes {
			if r.ErrorsByCause == nil {
				r.ErrorsByCause = make(map[string]int64)
			}
			r.ErrorsByCause[c] += n
		}
		r.PortExhaustion = r.PortExhaustion || f.portExhausted
	}
	if o.Test == TCPCRR {
		if tw := timeWaitSockets(); tw >= 0 {
			r.ClientTimeWait = &tw
		}
	}
	if err := eng.fill(rc, r); err != nil {
		return nil, err
	}
	return r, nil
}
