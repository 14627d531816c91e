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
	"github.com/cnibench/cnibench/engine/internal/portshare"
	"github.com/cnibench/cnibench/engine/kinds"
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
	// pumped is closed when TCP_STREAM's pump has written every stream's
	// last message (streampump.go).
	pumped chan struct{}
	pumpIn atomic.Int32 // the streams that reached the pump

	measStart, measEnd time.Time
	flows              []flow

	// UDP_STREAM: the server's report.
	report udpReport

	// ports: TCP_CRR's share of the ephemeral range (Options.PortShare);
	// nil when none was asked or the kernel cannot restrict it (portsNote).
	ports     *portshare.Range
	portsNote string
}

// flow holds one flow's socket set and counters; only its goroutine writes
// them until Run has waited for it.
type flow struct {
	id  int
	fds fdSet
	fd  int // UDP_STREAM: kept open for the report; TCP_STREAM: the pump's

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
		pumped:  make(chan struct{}),
		flows:   make([]flow, o.Streams),
	}
	rc.wait = waiter{spin: o.Mode == BusyPoll, stop: &rc.stop}
	if err := rc.takePortShare(); err != nil {
		return nil, err
	}
	rc.hardStop = eng.hardStop
	c := &coordinator{ctx: ctx, rc: rc, eng: eng, done: make(chan struct{})}
	c.startFlows()
	defer func() {
		for i := range rc.flows {
			rc.flows[i].fds.closeAll()
		}
	}()
	if err := c.awaitSetup(); err != nil {
		return c.fail(err)
	}
	cpu0, cpu1, err := c.measure()
	if err != nil {
		return c.fail(err)
	}
	if err := c.finish(); err != nil {
		return nil, err
	}
	r := c.result(cpu0, cpu1)
	if err := eng.fill(rc, r); err != nil {
		return nil, err
	}
	return r, nil
}

// takePortShare works out the local ports of Options.PortShare (TCP_CRR
// only: the other tests keep one connection per flow) and whether this
// kernel can hold a socket to them; without IP_LOCAL_PORT_RANGE the run
// goes on over the whole range and says so in the result.
func (rc *runCtx) takePortShare() error {
	s := rc.o.PortShare
	if s == nil || rc.o.Test != TCPCRR {
		return nil
	}
	family, _ := sockaddr(rc.ip, rc.o.Port)
	r, note, err := portshare.Take(family, s.Index, s.Count)
	if err != nil {
		return fmt.Errorf("%s: %w", rc.o.Test, err)
	}
	rc.ports, rc.portsNote = r, note
	return nil
}

// coordinator drives one Run's flows through its phases: setup, warmup,
// measured interval, stop, and the result.
type coordinator struct {
	ctx   context.Context
	rc    *runCtx
	eng   engine
	done  chan struct{} // closed when every flow's goroutine has returned
	phase string        // for errors: where a cancelled run was
}

// startFlows starts one goroutine per flow, each on its own OS thread
// unless the engine uses the netpoller.
func (c *coordinator) startFlows() {
	var wg sync.WaitGroup
	for i := range c.rc.flows {
		f := &c.rc.flows[i]
		f.id = i
		f.fd = -1
		wg.Add(1)
		go func() {
			defer wg.Done()
			if !c.eng.netpoll {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
			}
			f.err = c.eng.flow(c.rc, f)
		}()
	}
	go func() { wg.Wait(); close(c.done) }()
}

// fail stops every flow and returns err once they have all exited, so
// nothing outlives Run.
func (c *coordinator) fail(err error) (*Result, error) {
	c.rc.abort()
	select {
	case <-c.rc.goCh:
	default:
		close(c.rc.goCh)
	}
	<-c.done
	return nil, err
}

// ctxErr is the error of a cancelled run, naming the phase it was in (a
// deadline hit while connecting is not one hit while stopping).
func (c *coordinator) ctxErr() error {
	return fmt.Errorf("%s %s: %s: %w", c.rc.o.Test, c.rc.addr, c.phase, c.ctx.Err())
}

// awaitSetup waits until every flow is connected (or the first failure).
func (c *coordinator) awaitSetup() error {
	for i := range c.rc.o.Streams {
		c.phase = fmt.Sprintf("setup (%d of %d flows ready)", i, c.rc.o.Streams)
		select {
		case err := <-c.rc.readyCh:
			if err != nil {
				return err
			}
		case <-c.ctx.Done():
			return c.ctxErr()
		}
	}
	return nil
}

// measure releases the flows, lets the warmup pass and times the measured
// interval, reading the process's CPU time at both ends of it.
func (c *coordinator) measure() (cpu0, cpu1 cpuuse.Times, err error) {
	rc := c.rc
	t0 := time.Now()
	rc.measStart = t0.Add(time.Duration(rc.o.Warmup))
	rc.measEnd = rc.measStart.Add(time.Duration(rc.o.Duration))
	close(rc.goCh)
	c.phase = "warmup"
	if !c.sleepUntil(rc.measStart) {
		return cpu0, cpu1, c.ctxErr()
	}
	cpu0 = cpuuse.Process()
	c.phase = "measured interval"
	if !c.sleepUntil(rc.measEnd) {
		return cpu0, cpu1, c.ctxErr()
	}
	cpu1 = cpuuse.Process()
	return cpu0, cpu1, nil
}

// sleepUntil waits for t; false when ctx was cancelled first.
func (c *coordinator) sleepUntil(t time.Time) bool {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-c.ctx.Done():
		return false
	case <-c.done: // every flow failed early
		return true
	}
}

// finish stops the flows, waits for them (at most finishTimeout) and runs
// the engine's own finish (e.g. UDP_STREAM's server report).
func (c *coordinator) finish() error {
	rc := c.rc
	c.phase = "stopping the flows"
	rc.stop.Store(true)
	if c.eng.hardStop {
		for i := range rc.flows {
			rc.flows[i].fds.shutdown()
		}
	}
	timer := time.NewTimer(finishTimeout)
	defer timer.Stop()
	select {
	case <-c.done:
	case <-c.ctx.Done():
		_, err := c.fail(c.ctxErr())
		return err
	case <-timer.C:
		_, err := c.fail(fmt.Errorf("%s: %s: streams did not finish within %s of the end of the test", rc.o.Test, rc.addr, finishTimeout))
		return err
	}
	for i := range rc.flows {
		if err := rc.flows[i].err; err != nil {
			return err
		}
	}
	if c.eng.finish != nil {
		c.phase = "finishing"
		if err := c.eng.finish(c.ctx, rc); err != nil {
			if c.ctx.Err() != nil {
				return c.ctxErr()
			}
			return err
		}
	}
	return nil
}

// result is what every engine reports: the interval, client CPU, and the
// flows' errors and their causes; eng.fill adds the engine's own.
func (c *coordinator) result(cpu0, cpu1 cpuuse.Times) *Result {
	rc, o := c.rc, c.rc.o
	r := &Result{
		Test:             o.Test,
		Options:          o,
		RunnerResults:    kinds.RunnerResults{Start: rc.measStart, End: rc.measEnd, Seconds: rc.measEnd.Sub(rc.measStart).Seconds()},
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
		for cause, n := range f.causes {
			if r.ErrorsByCause == nil {
				r.ErrorsByCause = make(map[string]int64)
			}
			r.ErrorsByCause[cause] += n
		}
		r.PortExhaustion = r.PortExhaustion || f.portExhausted
	}
	if rc.ports != nil {
		r.LocalPorts = rc.ports.String()
	}
	r.PortShareNote = rc.portsNote
	if o.Test == TCPCRR {
		if tw := timeWaitSockets(); tw >= 0 {
			r.ClientTimeWait = &tw
		}
	}
	return r
}
