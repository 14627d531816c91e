package engine

import (
	"fmt"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cnibench/cnibench/stats"
)

// tcpCRRFlow does netperf TCP_CRR: per transaction a new connection, the
// request (behind the 32-byte hello, in one send), the response, then the
// client closes first (so TIME_WAIT lands on the client, as with netperf).
// Latency runs from connect() to the response; the rate also pays close().
func tcpCRRFlow(rc *runCtx, f *flow) error {
	f.hist = stats.NewHistogram()
	size := rc.o.MessageSize
	family, sa := sockaddr(rc.ip, rc.o.Port)
	req := make([]byte, hdrLen+size)
	h := tcpHello{test: TCPCRR, session: rc.session, msgSize: uint32(size), stream: uint32(f.id)}
	h.put(req)
	resp := make([]byte, size)

	// One untimed transaction first, with a connect timeout, so an
	// unreachable server fails the run at once with a clear error.
	_, err := crrOnce(rc, f, family, sa, req, resp, time.Now().Add(connectTimeout))
	if err != nil {
		err = fmt.Errorf("%s: %w", rc.o.Test, err)
	}
	if !rc.ready(err) {
		return err
	}
	var y yielder
	for {
		y.tick()
		start, err := crrOnce(rc, f, family, sa, req, resp, time.Time{})
		end := time.Now()
		if rc.stop.Load() || end.After(rc.measEnd) {
			return nil
		}
		measured := !start.IsZero() && !start.Before(rc.measStart)
		if err != nil {
			// Keep going (a refused or reset connection is one failed
			// transaction), but do not spin on a persistent failure.
			if measured {
				f.noteError(err)
			}
			time.Sleep(time.Millisecond)
			continue
		}
		if measured {
			stats.Record(f.hist, end.Sub(start))
			f.trans++
		}
	}
}

// crrOnce runs one connect/request/response/close transaction and returns
// when connect() started. Errors read "connect|send|recv ADDR: cause". In
// Blocking mode connect() blocks as netperf's does, unless a deadline is
// given (setup only); the end of the run wakes it with shutdown().
func crrOnce(rc *runCtx, f *flow, family int, sa unix.Sockaddr, req, resp []byte, deadline time.Time) (time.Time, error) {
	w := rc.wait
	nonblock := w.spin || !deadline.IsZero()
	fd, err := newSocket(family, unix.SOCK_STREAM, nonblock)
	if err != nil {
		return time.Time{}, fmt.Errorf("socket: %w", err)
	}
	if !f.fds.add(fd) {
		return time.Time{}, fmt.Errorf("connect: %w", errStopped)
	}
	defer f.fds.close(fd)
	start := time.Now()
	err = unix.Connect(fd, sa)
	switch {
	case err == unix.EINPROGRESS && w.spin:
		err = waitConnected(fd, w.stop, deadline, 0)
	case err == unix.EINPROGRESS || err == unix.EINTR:
		err = waitConnected(fd, w.stop, deadline, 100*time.Millisecond)
	}
	if err == nil && nonblock && !w.spin {
		err = unix.SetNonblock(fd, false)
	}
	if err != nil {
		return start, fmt.Errorf("connect %s: %w", rc.addr, err)
	}
	if err := w.send(fd, req); err != nil {
		return start, fmt.Errorf("send to %s: %w", rc.addr, err)
	}
	if err := w.readFull(fd, resp); err != nil {
		return start, fmt.Errorf("recv from %s: %w", rc.addr, err)
	}
	return start, nil
}
