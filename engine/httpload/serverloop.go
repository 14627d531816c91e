package httpload

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cnibench/cnibench/engine/internal/cpuuse"
	"github.com/cnibench/cnibench/engine/internal/epoll"
	"golang.org/x/sys/unix"
)

// Serve runs the server until ctx is cancelled (listening first if Listen
// was not called). On cancel it stops every event loop, closes every
// connection and the listener, and returns nil.
func (s *Server) Serve(ctx context.Context) error {
	s.init()
	s.mu.Lock()
	listening, serving := s.ln != nil, s.serving
	s.serving = true
	s.mu.Unlock()
	if serving {
		return fmt.Errorf("httpload server: Serve called twice")
	}
	if !listening {
		if err := s.Listen(); err != nil {
			return err
		}
	}
	defer s.ln.Close()
	var stop atomic.Bool
	n := cpuuse.Usable()
	loops := make([]*sloop, 0, n)
	defer func() {
		for _, l := range loops {
			l.closeAll()
		}
	}()
	for range n {
		l := &sloop{s: s, stop: &stop, listening: true}
		if err := l.ep.Init(); err != nil {
			return fmt.Errorf("httpload server: %v", err)
		}
		loops = append(loops, l)
		// Level-triggered, one loop woken per connection.
		ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLEXCLUSIVE, Fd: listenIdx}
		if err := l.ep.Ctl(unix.EPOLL_CTL_ADD, s.lfd, &ev); err != nil {
			return fmt.Errorf("httpload server: epoll: %v", err)
		}
	}
	var wg sync.WaitGroup
	for _, l := range loops {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l.run()
		}()
	}
	halt := context.AfterFunc(ctx, func() {
		stop.Store(true)
		for _, l := range loops {
			l.ep.Wake()
		}
	})
	defer halt()
	wg.Wait()
	return nil
}

const listenIdx = -2 // epoll event Fd of the listening socket

// sconn is one accepted connection.
type sconn struct {
	fd       int
	gen      uint32
	rd       reader
	out      []byte // responses not yet written
	wpos     int    // bytes of out written
	bodyLeft int64  // request body bytes still to discard
	inBody   bool
	requests int // served on this connection

	readable, writable bool
	wantOut            bool   // EPOLLOUT registered
	closeAfter         bool   // close once out is written
	closeNext          bool   // the request being read asks to close
	resp               []byte // response to the request being read
	respondAt          int64  // Delay: when pending may go out (0: none)
	pending            []byte
}

type sloop struct {
	ep   epoll.Poller
	s    *Server
	stop *atomic.Bool
	base time.Time

	byFd    []*sconn
	free    []*sconn
	delayed []delayedConn // Delay > 0: connections waiting to respond

	listening bool  // the listener is in the epoll set
	acceptAt  int64 // accept paused (out of descriptors) until then
	lastGo    int64
}

type delayedConn struct {
	c   *sconn
	gen uint32
}

func (l *sloop) now() int64 { return int64(time.Since(l.base)) }

func (l *sloop) run() {
	l.base = time.Now()
	for !l.stop.Load() {
		wait := int64(-1)
		if len(l.delayed) > 0 || !l.listening {
			now := l.now()
			next := now + int64(time.Second)
			if !l.listening {
				if now >= l.acceptAt {
					ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLEXCLUSIVE, Fd: listenIdx}
					l.listening = l.ep.Ctl(unix.EPOLL_CTL_ADD, l.s.lfd, &ev) == nil
				}
				next = min(next, l.acceptAt+int64(5*time.Millisecond))
			}
			keep := l.delayed[:0]
			for _, d := range l.delayed {
				c := d.c
				if c.gen != d.gen || c.respondAt == 0 {
					continue // closed meanwhile
				}
				if now >= c.respondAt {
					c.respondAt = 0
					c.out = append(c.out, c.pending...)
					l.service(c)
					if c.gen == d.gen && c.respondAt != 0 { // the next pipelined request
						keep = append(keep, d)
						next = min(next, c.respondAt)
					}
					continue
				}
				keep = append(keep, d)
				next = min(next, c.respondAt)
			}
			clear(l.delayed[len(keep):])
			l.delayed = keep
			wait = max(0, next-l.now())
		}
		n := l.ep.Wait(wait)
		for i := range n {
			ev := &l.ep.Events[i]
			switch ev.Fd {
			case -1:
				l.ep.DrainWake()
				continue
			case listenIdx:
				l.accept()
				continue
			}
			if int(ev.Fd) >= len(l.byFd) {
				continue
			}
			c := l.byFd[ev.Fd]
			if c == nil || uint32(ev.Pad) != c.gen {
				continue
			}
			if ev.Events&(unix.EPOLLIN|unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
				c.readable = true
			}
			if ev.Events&(unix.EPOLLOUT|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
				c.writable = true
			}
			l.service(c)
		}
		now := l.now()
		if now-l.lastGo >= int64(4*time.Millisecond) { // see loop.yield
			l.lastGo = now
			runtime.Gosched()
		}
	}
}

func (l *sloop) closeAll() {
	for _, c := range l.byFd {
		if c != nil {
			l.closeConn(c)
		}
	}
	l.ep.Close()
}

// accept takes the connections waiting on the listener (a bounded batch,
// so that one loop does not starve its connections).
func (l *sloop) accept() {
	for range 64 {
		// Raw accept4 without the peer address: unix.Accept4 also decodes
		// it, which costs a getsockopt per connection.
		r, _, e := unix.Syscall6(unix.SYS_ACCEPT4, uintptr(l.s.lfd), 0, 0, unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0, 0)
		fd := int(r)
		var err error
		if e != 0 {
			err = e
		}
		switch err {
		case nil:
		case unix.EINTR, unix.ECONNABORTED:
			continue
		case unix.EMFILE, unix.ENFILE, unix.ENOBUFS, unix.ENOMEM:
			// Out of descriptors: stop listening for 5 ms rather than spin
			// on a level-triggered listener.
			l.ep.Ctl(unix.EPOLL_CTL_DEL, l.s.lfd, nil)
			l.listening = false
			l.acceptAt = l.now() + int64(5*time.Millisecond)
			return
		default: // EAGAIN: no more (or another loop took it)
			return
		}
		var c *sconn
		if k := len(l.free); k > 0 {
			c = l.free[k-1]
			l.free = l.free[:k-1]
		} else {
			c = &sconn{rd: newReader(initialBuf)}
		}
		c.fd = fd
		c.gen++
		for fd >= len(l.byFd) {
			l.byFd = append(l.byFd, nil)
		}
		l.byFd[fd] = c
		// Input only: responses are small and almost never block; EPOLLOUT
		// is added only when a write does (saves a wake-up per ACK).
		ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLRDHUP | unix.EPOLLET, Fd: int32(fd), Pad: int32(c.gen)}
		if err := l.ep.Ctl(unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
			l.closeConn(c)
			continue
		}
		// Wait for the request's event rather than read now: clients send
		// it once their connect completes, which is after the accept
		// (measured: a read straight away returned EAGAIN every time).
		c.readable, c.writable = false, true
	}
}

func (l *sloop) closeConn(c *sconn) {
	if c.fd < 0 {
		return
	}
	unix.Close(c.fd)
	l.byFd[c.fd] = nil
	c.fd = -1
	c.gen++
	c.rd.reset()
	if cap(c.rd.buf) > initialBuf {
		c.rd.buf = make([]byte, initialBuf)
	}
	c.out, c.wpos = c.out[:0], 0
	c.bodyLeft, c.inBody, c.requests = 0, false, 0
	c.closeAfter, c.closeNext, c.respondAt, c.pending, c.resp = false, false, 0, nil, nil
	c.readable, c.writable, c.wantOut = false, false, false
	l.free = append(l.free, c)
}

// service moves c forward as far as it can without blocking: write what
// is pending, parse and answer buffered requests, read more.
func (l *sloop) service(c *sconn) {
	for c.fd >= 0 {
		if c.wpos < len(c.out) {
			if !c.writable {
				return
			}
			n, err := unix.Write(c.fd, c.out[c.wpos:])
			if n > 0 {
				c.wpos += n
			}
			if err == unix.EAGAIN {
				c.writable = false
				if !c.wantOut {
					c.wantOut = true
					ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLOUT | unix.EPOLLRDHUP | unix.EPOLLET, Fd: int32(c.fd), Pad: int32(c.gen)}
					l.ep.Ctl(unix.EPOLL_CTL_MOD, c.fd, &ev)
				}
				return
			}
			if err != nil && err != unix.EINTR {
				l.closeConn(c)
				return
			}
			if c.wpos < len(c.out) {
				continue
			}
			c.out, c.wpos = c.out[:0], 0
		}
		if c.respondAt != 0 {
			return // Delay: the loop's timer scan resumes it
		}
		if c.closeAfter {
			l.closeConn(c)
			return
		}
		if l.parse(c) {
			continue // responses (or a 100 Continue) to write
		}
		if c.closeAfter || c.respondAt != 0 {
			continue
		}
		// Need more input.
		if !c.readable {
			return
		}
		if err := c.rd.makeRoom(); err != nil {
			c.out = append(c.out, resp400...)
			c.closeAfter = true
			continue
		}
		space := len(c.rd.buf) - c.rd.w
		n, err := unix.Read(c.fd, c.rd.buf[c.rd.w:])
		switch {
		case err == unix.EAGAIN:
			c.readable = false
			return
		case err == unix.EINTR:
			continue
		case err != nil || n == 0: // reset, or the client closed
			l.closeConn(c)
			return
		}
		c.rd.w += n
		if n < space {
			c.readable = false // drained: the next arrival raises a new edge
		}
	}
}

// parse handles the complete requests buffered in c, appending their
// responses to c.out; it reports whether it produced output.
func (l *sloop) parse(c *sconn) bool {
	s := l.s
	produced := false
	for {
		rd := &c.rd
		if c.inBody {
			take := min(int64(rd.w-rd.r), c.bodyLeft)
			rd.r += int(take)
			c.bodyLeft -= take
			if c.bodyLeft > 0 {
				return produced
			}
			c.inBody = false
			l.respond(c)
			produced = true
			if c.closeAfter || c.respondAt != 0 {
				return true
			}
			continue
		}
		// Skip empty lines between requests.
		for rd.w-rd.r >= 2 && rd.buf[rd.r] == '\r' && rd.buf[rd.r+1] == '\n' {
			rd.r += 2
		}
		i := bytes.Index(rd.buf[rd.r:rd.w], crlfcrlf)
		if i < 0 {
			if rd.w-rd.r >= maxHeader {
				c.out = append(c.out, resp400...)
				c.closeAfter = true
				return true
			}
			return produced
		}
		block := rd.buf[rd.r : rd.r+i+4]
		rd.r += i + 4
		// Request line: METHOD SP target SP HTTP/1.x
		eol := bytes.Index(block, crlf)
		line := block[:eol]
		sp := bytes.LastIndexByte(line, ' ')
		var h msgHeader
		if sp < 0 || bytes.IndexByte(line, ' ') == sp || len(line)-sp != 9 || !bytes.HasPrefix(line[sp+1:], []byte("HTTP/1.")) ||
			parseFields(block[eol+2:], &h) != nil {
			c.out = append(c.out, resp400...)
			c.closeAfter = true
			return true
		}
		if h.chunked {
			c.out = append(c.out, resp411...)
			c.closeAfter = true
			return true
		}
		http10 := line[len(line)-1] == '0'
		// The connection closes once this request's response is out.
		c.closeNext = h.connClose || (http10 && !h.connKeepAlive)
		switch {
		case c.closeNext:
			c.resp = s.respCl
		case http10:
			c.resp = s.respKA0
		default:
			c.resp = s.respKA
		}
		if c.requests == 1 && !c.closeNext {
			// Keep-alive in use: answers must not wait for ACKs (nginx
			// sets TCP_NODELAY at the same point).
			unix.SetsockoptInt(c.fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
		}
		c.requests++
		c.bodyLeft = max(h.contentLength, 0)
		c.inBody = true
		if h.expect100 && c.bodyLeft > 0 && rd.w == rd.r {
			c.out = append(c.out, resp100...)
			produced = true
		}
	}
}

// respond queues the response to the request just read.
func (l *sloop) respond(c *sconn) {
	s := l.s
	if s.Work > 0 {
		spin(s.Work)
	}
	if c.closeNext {
		c.closeNext = false
		c.closeAfter = true
	}
	if s.Delay > 0 {
		c.pending = c.resp
		c.respondAt = l.now() + int64(s.Delay)
		l.delayed = append(l.delayed, delayedConn{c, c.gen})
		return
	}
	c.out = append(c.out, c.resp...)
}
