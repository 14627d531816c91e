package httpload

import (
	"bytes"
	"io"
	"runtime"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cnibench/cnibench/engine/internal/epoll"
	"github.com/cnibench/cnibench/engine/internal/portshare"
	"github.com/cnibench/cnibench/stats"
)

// The client is a set of epoll event loops, one goroutine each, like wrk's
// threads: non-blocking sockets, edge-triggered, each registered once, a
// precomputed request written straight from a shared buffer and a
// resumable response parser. A first version with a goroutine per
// net.Conn matched wrk with keep-alive but reached only 0.86x of wrk with
// "Connection: close": same kernel CPU per request (40 us) but 17 us of
// user CPU against wrk's 8 (net.Dial's getsockname, getpeername,
// setsockopt, SO_ERROR, netpoll registration, allocations and a goroutine
// park per connect). The event loops use 5 us, and write the request right
// after connect() (the write says EAGAIN if the handshake is not done).

// Connection states.
const (
	stIdle    = iota // no request outstanding; the next one is due at nextAt
	stWriting        // request partly written (or connect in progress)
	stReading        // request written, response partly read
)

// econn is one client connection slot of a loop.
type econn struct {
	w   *worker
	li  int    // index in loop.conns, carried in epoll events
	fd  int    // -1: no socket
	gen uint32 // bumped when fd changes, so stale events are dropped

	state       int
	established bool // a write has succeeded on fd (else errors are connect errors)
	readable    bool // edge-triggered readiness not yet consumed
	writable    bool
	wpos        int
	rd          reader
	p           respParser
	rbytes      int64 // response bytes of the current request

	phase                  float64 // open loop: offset of this connection's schedule
	k                      int64   // open loop: index of the next request
	nextAt                 int64   // stIdle: when the next request is due
	intended, t0, deadline int64
}

type loop struct {
	ep     epoll.Poller
	r      *run
	sa     unix.Sockaddr // own copy: unix.Connect writes into it
	conns  []*econn
	lastGo int64
	tl     *timeline
}

func newLoop(r *run) (*loop, error) {
	l := &loop{r: r, tl: newTimeline(time.Duration(r.o.Duration))}
	_, l.sa = sockaddr(r.raddr.IP, r.raddr.Port)
	if err := l.ep.Init(); err != nil {
		return nil, err
	}
	return l, nil
}

func (l *loop) addConn(idx int, w *worker) {
	c := &econn{w: w, li: len(l.conns), fd: -1, rd: newReader(initialBuf)}
	if l.r.interval > 0 {
		c.phase = l.r.interval * float64(idx) / float64(l.r.o.Connections)
		c.nextAt = int64(c.phase)
	}
	l.conns = append(l.conns, c)
}

// Wake interrupts the loop's epoll wait.
func (l *loop) Wake() { l.ep.Wake() }

// Close releases every descriptor; only after Run returned.
func (l *loop) Close() {
	for _, c := range l.conns {
		l.closeConn(c)
	}
	l.ep.Close()
}

func (l *loop) Run() {
	r := l.r
	for !r.stop.Load() {
		now := r.now()
		next := now + int64(time.Second)
		for _, c := range l.conns {
			if c.state == stIdle {
				if c.nextAt <= now {
					l.start(c, now)
				}
			} else if c.deadline <= now {
				if c.established {
					l.fail(c, errTimeout, now)
				} else { // the handshake never completed
					l.fail(c, &connectError{errTimeout}, now)
				}
			}
			if c.state == stIdle {
				next = min(next, c.nextAt)
			} else {
				next = min(next, c.deadline)
			}
		}
		n := l.ep.Wait(max(0, next-r.now()))
		for i := range n {
			ev := &l.ep.Events[i]
			if ev.Fd < 0 {
				l.ep.DrainWake()
				continue
			}
			c := l.conns[ev.Fd]
			if c.fd < 0 || uint32(ev.Pad) != c.gen {
				continue
			}
			if ev.Events&(unix.EPOLLIN|unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
				c.readable = true
			}
			if ev.Events&(unix.EPOLLOUT|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
				c.writable = true
			}
			switch c.state {
			case stWriting:
				if c.writable {
					l.write(c)
				}
			case stReading:
				if c.readable {
					l.read(c)
				}
			}
		}
		l.yield()
	}
}

// yield passes through the Go scheduler every few ms: a goroutine that
// only makes syscalls is otherwise treated as long-running by sysmon,
// which then takes its P away mid-syscall and polls at a high rate (see
// engine/sched.go, measured there at 15-25% of TCP_RR's rate).
func (l *loop) yield() {
	now := l.r.now()
	if now-l.lastGo >= int64(4*time.Millisecond) {
		l.lastGo = now
		runtime.Gosched()
	}
}

// start begins c's next request at now: connects if needed, then writes.
func (l *loop) start(c *econn, now int64) {
	r := l.r
	c.t0 = now
	c.intended = now
	if r.interval > 0 {
		c.intended = c.nextAt
	}
	c.deadline = now + r.timeout
	c.wpos = 0
	c.rbytes = 0
	c.p = respParser{}
	if c.fd < 0 {
		if err := l.connect(c); err != nil {
			l.fail(c, &connectError{err}, now)
			return
		}
		if r.inWindow(now) {
			c.w.connects++
		}
	}
	c.state = stWriting
	c.writable = true // optimistic: the write says EAGAIN if it is not
	l.write(c)
}

func (l *loop) connect(c *econn) error {
	fd, err := unix.Socket(l.r.family, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	if l.r.ports != nil {
		if err := portshare.Apply(fd, *l.r.ports); err != nil {
			unix.Close(fd)
			return err
		}
	}
	if l.r.o.KeepAlive {
		// Later requests must not wait for the ACK of earlier ones.
		unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
	}
	if err := unix.Connect(fd, l.sa); err != nil && err != unix.EINPROGRESS {
		unix.Close(fd)
		return err
	}
	c.gen++
	// Edge-triggered, for input and output; Pad tells a reused fd's stale
	// events from the current connection's.
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLOUT | unix.EPOLLRDHUP | unix.EPOLLET, Fd: int32(c.li), Pad: int32(c.gen)}
	if err := l.ep.Ctl(unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
		unix.Close(fd)
		return err
	}
	c.fd = fd
	c.established = false
	c.readable, c.writable = false, false
	c.rd.reset()
	return nil
}

func (l *loop) write(c *econn) {
	req := l.r.req
	for c.wpos < len(req) {
		n, err := unix.Write(c.fd, req[c.wpos:])
		if n > 0 {
			c.wpos += n
			c.established = true
			if l.r.inWindow(c.t0) {
				c.w.bytesSent += int64(n)
			}
		}
		switch err {
		case nil:
		case unix.EAGAIN:
			c.writable = false
			return
		case unix.EINTR:
		default:
			if !c.established {
				err = &connectError{err}
			}
			l.fail(c, err, l.r.now())
			return
		}
	}
	c.state = stReading
	if c.readable {
		l.read(c)
	}
}

func (l *loop) read(c *econn) {
	for {
		done, err := c.p.feed(&c.rd, false)
		if err != nil {
			l.fail(c, err, l.r.now())
			return
		}
		if done {
			l.complete(c)
			return
		}
		if !c.readable {
			return
		}
		if err := c.rd.makeRoom(); err != nil {
			l.fail(c, err, l.r.now())
			return
		}
		space := len(c.rd.buf) - c.rd.w
		n, err := unix.Read(c.fd, c.rd.buf[c.rd.w:])
		switch {
		case err == unix.EAGAIN:
			c.readable = false
			return
		case err == unix.EINTR:
			continue
		case err != nil:
			l.fail(c, err, l.r.now())
			return
		case n == 0:
			done, err := c.p.feed(&c.rd, true)
			if done {
				c.p.closeAfter = true
				l.complete(c)
			} else {
				if err == nil {
					err = io.ErrUnexpectedEOF
				}
				l.fail(c, err, l.r.now())
			}
			return
		}
		c.rd.w += n
		c.rbytes += int64(n)
		if n < space {
			// Drained: the next arrival raises a new edge.
			c.readable = false
		}
	}
}

// complete accounts a full response and schedules the next request.
func (l *loop) complete(c *econn) {
	r := l.r
	now := r.now()
	if c.p.closeAfter || !r.o.KeepAlive {
		l.closeConn(c)
	}
	c.state = stIdle
	if r.inWindow(now) && !r.stop.Load() {
		w := c.w
		w.requests++
		w.bytesRecv += c.rbytes
		if c.p.status == 200 {
			w.status200++
		} else {
			w.errs.Status++
			if w.errs.First == "" {
				w.errs.First = "HTTP status " + itoa(c.p.status)
			}
		}
		w.codes[c.p.status]++
		stats.Record(w.hist, time.Duration(now-c.intended))
		l.tl.request(now-r.measFrom, time.Duration(now-c.intended))
		if c.p.status != 200 {
			l.tl.failure(now - r.measFrom)
		}
		if w.histU != nil {
			stats.Record(w.histU, time.Duration(now-c.t0))
		}
	}
	l.schedule(c, now, false)
	if c.nextAt <= now && !r.stop.Load() {
		l.start(c, now)
	}
}

// schedule sets when c's next request is due: on the open-loop schedule,
// or at once in a closed loop (after connectBackoff when a connect failed).
func (l *loop) schedule(c *econn, now int64, connectFailed bool) {
	r := l.r
	switch {
	case r.interval > 0:
		c.k++
		c.nextAt = int64(c.phase + float64(c.k)*r.interval)
	case connectFailed:
		c.nextAt = now + int64(connectBackoff)
	default:
		c.nextAt = now
	}
}

// fail counts a failed request, drops the connection and schedules the
// next request (which the loop starts on its next pass, never from here).
func (l *loop) fail(c *econn, err error, now int64) {
	r := l.r
	l.closeConn(c)
	c.state = stIdle
	if r.inWindow(now) && !r.stop.Load() {
		c.w.noteError(err)
		l.tl.failure(now - r.measFrom)
	}
	l.schedule(c, now, isConnectErr(err))
}

func (l *loop) closeConn(c *econn) {
	if c.fd >= 0 {
		unix.Close(c.fd) // also removes it from the epoll set
		c.fd = -1
		c.gen++
	}
}

// timeoutError is a request that did not complete within Options.Timeout.
type timeoutError struct{}

func (timeoutError) Error() string   { return "request timed out" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }

var errTimeout error = timeoutError{}

func itoa(n int) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			return string(b[i:])
		}
	}
}

// respParser is a resumable HTTP/1.x response parser: feed consumes what
// is buffered and says whether a complete response has been consumed.
type respParser struct {
	state      int
	scanned    int // psHeader: bytes from rd.r known to hold no CRLFCRLF
	remaining  int64
	status     int
	closeAfter bool
}

const (
	psHeader = iota
	psBody
	psChunkSize
	psChunkData
	psChunkCRLF
	psTrailer
	psEOF
)

// feed consumes buffered bytes of the response. eof says the peer closed
// the connection after what is buffered.
// Long on purpose: one state machine on the hot path; its states read best side by side, and calls per byte would cost throughput.
func (p *respParser) feed(rd *reader, eof bool) (bool, error) {
	short := func() (bool, error) {
		if eof {
			return false, io.ErrUnexpectedEOF
		}
		return false, nil
	}
	for {
		switch p.state {
		case psHeader:
			i := bytes.Index(rd.buf[rd.r+p.scanned:rd.w], crlfcrlf)
			if i < 0 {
				p.scanned = max(0, rd.w-rd.r-3)
				if rd.w-rd.r >= maxHeader {
					return false, errHeaderTooLarge
				}
				return short()
			}
			n := p.scanned + i + 4
			block := rd.buf[rd.r : rd.r+n]
			rd.r += n
			p.scanned = 0
			// Status line: HTTP/1.x SP 3DIGIT [SP reason]
			if len(block) < 16 || !bytes.HasPrefix(block, []byte("HTTP/1.")) || block[8] != ' ' {
				return false, &protoError{"bad status line"}
			}
			d0, d1, d2 := block[9]-'0', block[10]-'0', block[11]-'0'
			if d0 > 9 || d1 > 9 || d2 > 9 {
				return false, &protoError{"bad status code"}
			}
			status := int(d0)*100 + int(d1)*10 + int(d2)
			var h msgHeader
			eol := bytes.Index(block, crlf)
			if err := parseFields(block[eol+2:], &h); err != nil {
				return false, err
			}
			if status >= 100 && status < 200 {
				continue // interim response
			}
			p.status = status
			p.closeAfter = h.connClose || (block[7] == '0' && !h.connKeepAlive)
			switch {
			case status == 204 || status == 304:
				return true, nil
			case h.chunked:
				p.state = psChunkSize
			case h.contentLength >= 0:
				p.remaining = h.contentLength
				p.state = psBody
			default:
				p.closeAfter = true
				p.state = psEOF
			}
		case psBody, psChunkData:
			take := min(int64(rd.w-rd.r), p.remaining)
			rd.r += int(take)
			p.remaining -= take
			if p.remaining > 0 {
				return short()
			}
			if p.state == psBody {
				return true, nil
			}
			p.state = psChunkCRLF
		case psChunkCRLF:
			if rd.w-rd.r < 2 {
				return short()
			}
			if rd.buf[rd.r] != '\r' || rd.buf[rd.r+1] != '\n' {
				return false, &protoError{"chunk not followed by CRLF"}
			}
			rd.r += 2
			p.state = psChunkSize
		case psChunkSize, psTrailer:
			i := bytes.Index(rd.buf[rd.r:rd.w], crlf)
			if i < 0 {
				if rd.w-rd.r >= maxHeader {
					return false, errHeaderTooLarge
				}
				return short()
			}
			line := rd.buf[rd.r : rd.r+i]
			rd.r += i + 2
			if p.state == psTrailer {
				if len(line) == 0 {
					return true, nil
				}
				continue
			}
			size, err := chunkSize(line)
			if err != nil {
				return false, err
			}
			if size == 0 {
				p.state = psTrailer
			} else {
				p.remaining = size
				p.state = psChunkData
			}
		case psEOF:
			rd.r = rd.w
			return eof, nil
		}
	}
}

func chunkSize(l []byte) (int64, error) {
	if i := bytes.IndexByte(l, ';'); i >= 0 {
		l = l[:i]
	}
	l = trimSpace(l)
	if len(l) == 0 || len(l) > 15 {
		return 0, &protoError{"bad chunk size"}
	}
	var size int64
	for _, b := range l {
		v := unhex(b)
		if v < 0 {
			return 0, &protoError{"bad chunk size"}
		}
		size = size<<4 | int64(v)
	}
	return size, nil
}
