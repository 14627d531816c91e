package engine

import (
	"fmt"
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// crrRequestWait is how long a TCP_CRR worker waits in recv() for a
// request before it hands the connection to a thread of its own and goes
// back to accept(). It is set on the listening socket (SO_RCVTIMEO), which
// accepted sockets inherit, so it costs no syscall per connection; accept()
// then also wakes this often when no client connects.
const crrRequestWait = 50 * time.Millisecond

// startCRR starts the TCP_CRR workers: one per P but the spare one (at
// least one), each a locked thread that never spawns another per
// connection. Every connection is short (the server closes first, right
// after its response), so a fixed set of threads keeps up, and each keeps
// its P across accept() instead of handing it around (see spareP).
func (s *Server) startCRR(l *listener, errc chan<- error) {
	if err := setRecvTimeout(l.fd, crrRequestWait); err != nil {
		fail(errc, fmt.Errorf("%s server: SO_RCVTIMEO on %s: %w", l.test, l.addr, err))
		return
	}
	for range max(1, runtime.GOMAXPROCS(0)-1) {
		s.spawn(l, s.crrWorker, errc)
	}
}

// crrWorker serves TCP_CRR as netserver does: blocking accept(), recv() of
// the hello and request, send() of the response, close(): the server
// closes first, so TIME_WAIT lands on the server. A client that connects
// and sends nothing within crrRequestWait gets a thread of its own, so it
// cannot hold up the others.
func (s *Server) crrWorker(l *listener, errc chan<- error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	buf := make([]byte, tcpServerBuf)
	y := yielder{perCall: true}
	for {
		y.tick()
		fd, err := accept(l.fd)
		if s.closing.Load() {
			if err == nil {
				_ = unix.Close(fd)
			}
			return
		}
		if err != nil {
			if retryable(err) { // EAGAIN: crrRequestWait passed idle
				continue
			}
			fail(errc, fmt.Errorf("%s server: accept on %s: %w", l.test, l.addr, err))
			return
		}
		if !s.conns.add(fd) {
			return
		}
		n, err := recvFlags(fd, buf, 0)
		if err == unix.EAGAIN || err == unix.EINTR {
			s.slowCRR(l, fd)
			continue
		}
		if err == nil && n > 0 && s.serveTCPConn(l.test, fd, buf, n) {
			continue
		}
		s.conns.close(fd)
	}
}

// slowCRR serves one TCP_CRR connection whose request is late on a thread
// of its own, without the listener's receive timeout.
func (s *Server) slowCRR(l *listener, fd int) {
	if s.closing.Load() || l.total.Add(1) > maxWorkers {
		l.total.Add(-1)
		s.conns.close(fd)
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer l.total.Add(-1)
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if setRecvTimeout(fd, 0) == nil && s.serveTCPConn(l.test, fd, make([]byte, tcpServerBuf), 0) {
			return
		}
		s.conns.close(fd)
	}()
}
