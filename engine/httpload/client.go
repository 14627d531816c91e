package httpload

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
	"golang.org/x/sys/unix"

	"github.com/cnibench/cnibench/engine/internal/cpuuse"
	"github.com/cnibench/cnibench/engine/internal/portshare"
	"github.com/cnibench/cnibench/engine/internal/window"
	"github.com/cnibench/cnibench/engine/kinds"
	"github.com/cnibench/cnibench/stats"
)

// Test hooks.
var (
	// connectBackoff is how long a closed-loop connection waits after a
	// failed connect before the next attempt, so a dead server is not
	// hammered in a busy loop (open-loop connections just wait for their
	// next slot).
	connectBackoff = 10 * time.Millisecond
)

// run is the state shared by the event loops of one Run. Times are
// nanoseconds since base (monotonic clock).
type run struct {
	o        Options
	t        target
	raddr    *net.TCPAddr
	family   int
	req      []byte // the complete request, precomputed
	base     time.Time
	measFrom int64
	measTo   int64
	timeout  int64
	interval float64 // open loop: ns between a connection's requests
	// ports: Options.PortShare's span of local ports; nil when none was
	// asked or the kernel cannot restrict it (portsNote).
	ports     *portshare.Range
	portsNote string

	stop    atomic.Bool
	loops   []*loop
	workers []*worker
}

func (r *run) now() int64 { return int64(time.Since(r.base)) }

func (r *run) inWindow(t int64) bool { return t >= r.measFrom && t < r.measTo }

// worker holds one connection's counters; only its event loop writes them
// until Run has waited for the loop.
type worker struct {
	hist, histU          *hdr.Histogram // corrected, uncorrected (open loop only)
	requests, status200  int64
	connects             int64
	bytesSent, bytesRecv int64
	errs                 Errors
	codes                map[int]int64
}

// Run validates o and drives the target: o.Warmup unmeasured, then
// o.Duration measured, with o.Connections connections spread over
// o.Threads event loops. A first connect is tried before anything else,
// so a target that is down gives a one-line error at once; afterwards
// failures are counted in Result.Errors, not returned. Cancelling ctx
// stops every loop and returns an error wrapping ctx.Err() within
// milliseconds.
func Run(ctx context.Context, o Options) (*Result, error) {
	t, err := o.ValidateTarget()
	if err != nil {
		return nil, err
	}
	r := &run{o: o, t: t, timeout: int64(o.Timeout)}
	ip, err := resolve(ctx, t.Host)
	if err != nil {
		return nil, fmt.Errorf("httpload: resolve %s: %v", t.Host, rootErr(err))
	}
	r.raddr = &net.TCPAddr{IP: ip, Port: t.Port}
	r.family, _ = sockaddr(ip, t.Port)
	addr := r.raddr.String()
	r.req = buildRequest(&o, t)
	if o.QPS > 0 {
		r.interval = float64(o.Connections) / o.QPS * 1e9
	}

	// Probe: fail fast, in one line, when nothing answers.
	d := net.Dialer{KeepAlive: -1, Timeout: min(time.Duration(o.Timeout), 5*time.Second)}
	pc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("httpload %s: %w", t.Display, ctx.Err())
		}
		return nil, fmt.Errorf("httpload: cannot connect to %s: %v", addr, rootErr(err))
	}
	pc.Close()
	if s := o.PortShare; s != nil {
		if r.ports, r.portsNote, err = portshare.Take(r.family, s.Index, s.Count); err != nil {
			return nil, fmt.Errorf("httpload: %v", err)
		}
	}

	nloops := min(o.Threads, o.Connections)
	if nloops == 0 {
		nloops = min(cpuuse.Usable(), o.Connections)
	}
	r.workers = make([]*worker, o.Connections)
	for i := range r.workers {
		w := &worker{hist: stats.NewHistogram(), codes: make(map[int]int64)}
		if o.QPS > 0 {
			w.histU = stats.NewHistogram()
		}
		r.workers[i] = w
	}
	for i := range nloops {
		l, err := newLoop(r)
		if err != nil {
			window.CloseAll(r.loops)
			return nil, fmt.Errorf("httpload: %v", err)
		}
		// Connections i, i+nloops, ...: phases stay spread in every loop.
		for j := i; j < o.Connections; j += nloops {
			l.addConn(j, r.workers[j])
		}
		r.loops = append(r.loops, l)
	}

	r.base = time.Now()
	r.measFrom = int64(o.Warmup)
	r.measTo = r.measFrom + int64(o.Duration)
	w, err := window.Measure(ctx, r.base, time.Duration(o.Warmup), time.Duration(o.Duration), window.Of(&r.stop, r.loops), "httpload "+t.Display)
	if err != nil {
		return nil, err
	}
	return r.result(w)
}

// sockaddr builds the unix.Sockaddr for ip:port.
func sockaddr(ip net.IP, port int) (int, unix.Sockaddr) {
	if ip4 := ip.To4(); ip4 != nil {
		s := &unix.SockaddrInet4{Port: port}
		copy(s.Addr[:], ip4)
		return unix.AF_INET, s
	}
	s := &unix.SockaddrInet6{Port: port}
	copy(s.Addr[:], ip.To16())
	return unix.AF_INET6, s
}

// result merges the workers' counters and histograms.
func (r *run) result(w window.Window) (*Result, error) {
	o := r.o
	res := &Result{
		Options: o, URL: r.t.Display, Address: r.raddr.String(),
		Mode: "max-rate", RunnerResults: kinds.RunnerResults{Start: w.Start, End: w.End, Seconds: time.Duration(o.Duration).Seconds()},
		Conns: o.Connections, StatusCodes: map[int]int64{},
	}
	if o.QPS > 0 {
		res.Mode = "fixed-qps"
	}
	if r.ports != nil {
		res.LocalPorts = r.ports.String()
	}
	res.PortShareNote = r.portsNote
	h, hu := stats.NewHistogram(), stats.NewHistogram()
	for _, w := range r.workers {
		res.Requests += w.requests
		res.OK += w.status200
		res.Connects += w.connects
		res.BytesSent += w.bytesSent
		res.BytesReceived += w.bytesRecv
		for code, n := range w.codes {
			res.StatusCodes[code] += n
		}
		res.Errors.Add(w.errs)
		h.Merge(w.hist)
		if w.histU != nil {
			hu.Merge(w.histU)
		}
	}
	e := &res.Errors
	e.Total = e.Connect + e.Timeout + e.Status + e.ShortRead + e.Protocol
	res.RPS = float64(res.Requests) / res.Seconds
	if o.QPS > 0 {
		res.OpenLoop = window.Achieved(res.RPS, o.QPS, MissedTargetRatio)
	}
	var err error
	if res.Latency, res.LatencyUncorrected, err = window.Latencies(h, hu, o.QPS > 0); err != nil {
		return nil, err
	}
	var tls []*timeline
	for _, l := range r.loops {
		tls = append(tls, l.tl)
	}
	res.Timeline = mergeTimelines(tls)
	res.ClientCPU = w.CPU(SaturatedUtil)
	return res, nil
}

// buildRequest precomputes the request bytes.
func buildRequest(o *Options, t target) []byte {
	var b bytes.Buffer
	method := "GET"
	if o.RequestSize > 0 {
		method = "POST"
	}
	b.WriteString(method + " " + t.Path + " HTTP/1.1\r\nHost: " + t.HostHeader + "\r\nUser-Agent: cnibench\r\n")
	if !o.KeepAlive {
		b.WriteString("Connection: close\r\n")
	}
	if o.RequestSize > 0 {
		b.WriteString("Content-Type: application/octet-stream\r\nContent-Length: " + strconv.Itoa(o.RequestSize) + "\r\n")
	}
	for _, h := range o.Headers {
		b.WriteString(h + "\r\n")
	}
	b.WriteString("\r\n")
	b.Write(bytes.Repeat([]byte("x"), o.RequestSize))
	return b.Bytes()
}

// connectError marks a failed connect.
type connectError struct{ err error }

func (e *connectError) Error() string { return "connect: " + e.err.Error() }
func (e *connectError) Unwrap() error { return e.err }

func isConnectErr(err error) bool {
	var ce *connectError
	return errors.As(err, &ce)
}

// noteError counts err under its kind.
func (w *worker) noteError(err error) {
	var pe *protoError
	var ne net.Error
	switch {
	case isConnectErr(err):
		w.errs.Connect++
	case errors.As(err, &pe):
		w.errs.Protocol++
	case errors.As(err, &ne) && ne.Timeout(), errors.Is(err, os.ErrDeadlineExceeded), err == unix.ETIMEDOUT:
		w.errs.Timeout++
	default:
		w.errs.ShortRead++
	}
	if w.errs.First == "" {
		w.errs.First = oneLine(err)
	}
}

func oneLine(err error) string {
	s := err.Error()
	if i := bytes.IndexAny([]byte(s), "\r\n"); i >= 0 {
		s = s[:i]
	}
	return s
}

// rootErr strips net's wrapping ("dial tcp 1.2.3.4:5: connect: ") down to
// the cause, for one-line messages that name the address once.
func rootErr(err error) error {
	var se *os.SyscallError
	if errors.As(err, &se) {
		return se.Err
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return errno
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return errors.New("timed out")
	}
	var de *net.DNSError
	if errors.As(err, &de) {
		return errors.New(de.Err)
	}
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Err != nil {
		return oe.Err
	}
	return err
}

// resolve returns an address of host, preferring IPv4.
func resolve(ctx context.Context, host string) (net.IP, error) {
	if ip := net.ParseIP(host); ip != nil {
		return ip, nil
	}
	addrs, err := net.DefaultResolver.LookupIPAddr(ctx, host)
	if err != nil {
		return nil, err
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("no address")
	}
	for _, a := range addrs {
		if a.IP.To4() != nil {
			return a.IP, nil
		}
	}
	return addrs[0].IP, nil
}
