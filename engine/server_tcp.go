package engine

import (
	"fmt"
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// Limits on what a hello may ask of the server.
const (
	maxMsgSize = 1 << 30
	maxWarmup  = 24 * time.Hour
)

// tcpWorker is one server thread: accept a connection, serve it to the end
// with blocking calls, repeat. It spawns a new worker whenever it was the
// last idle one, so a client never waits on a busy thread; spare workers
// beyond maxSpare exit.
func (s *Server) tcpWorker(l *listener, errc chan<- error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	buf := make([]byte, tcpServerBuf)
	var y yielder
	for {
		y.tick()
		l.idle.Add(1)
		fd, err := accept(l.fd)
		idle := l.idle.Add(-1)
		if s.closing.Load() {
			if err == nil {
				_ = unix.Close(fd)
			}
			return
		}
		if err != nil {
			if retryable(err) {
				continue
			}
			fail(errc, fmt.Errorf("%s server: accept on %s: %w", l.test, l.addr, err))
			return
		}
		if idle == 0 {
			s.spawn(l, s.tcpWorker, errc)
		}
		if !s.conns.add(fd) {
			return
		}
		if !s.serveTCPConn(l.test, fd, buf, 0) {
			s.conns.close(fd)
		}
		if l.idle.Load() > maxSpare {
			return
		}
	}
}

// accept is accept4(2) without a peer address (no allocation).
func accept(lfd int) (int, error) {
	fd, _, e := unix.Syscall6(unix.SYS_ACCEPT4, uintptr(lfd), 0, 0, unix.SOCK_CLOEXEC, 0, 0)
	if e != 0 {
		return -1, e
	}
	return int(fd), nil
}

// serveTCPConn reads the hello (possibly with the first request behind it;
// buf[:n] already holds what was read of it) and runs the test it names; a
// hello for another test is dropped. It returns true if it handed fd over
// (a stream to its session's loop); otherwise the caller closes fd.
func (s *Server) serveTCPConn(t Test, fd int, buf []byte, n int) (handedOver bool) {
	for n < hdrLen {
		m, err := blocking.recv(fd, buf[n:])
		if err != nil {
			return false
		}
		n += m
	}
	t0 := time.Now()
	h, err := parseTCPHello(buf[:hdrLen])
	size := int(h.msgSize)
	if err != nil || h.test != t || size < 1 || size > maxMsgSize {
		return false
	}
	extra := n - hdrLen
	switch t {
	case TCPStream:
		// Read from the session's one loop (server_stream.go). No
		// SO_RCVLOWAT, as iperf3's server: waking the reader for 32 KiB at
		// a time saved it CPU but left the data queued in the socket, and
		// with it the kernel's receive work on the sender's CPU (4 streams
		// at 0.70× iperf3 -P 4 with it, 0.83× without; BENCHMARKS.md,
		// 2026-12-03).
		return s.joinStream(h.session, fd, extra, t0.Add(min(time.Duration(h.warmupNs), maxWarmup)))
	case TCPRR:
		if extra > size || unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1) != nil {
			return false
		}
		var y yielder
		for {
			y.tick()
			if err := readN(fd, buf, size-extra); err != nil {
				return false
			}
			extra = 0
			if err := writeN(fd, buf, size); err != nil {
				return false
			}
		}
	case TCPCRR:
		// Answer and return: the caller closes at once, so the server
		// closes first and TIME_WAIT lands here, as with netserver.
		if extra <= size && readN(fd, buf, size-extra) == nil {
			_ = writeN(fd, buf, size)
		}
	}
	return false
}
