package engine

import (
	"errors"
	"fmt"
	"io"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cnibench/cnibench/engine/internal/portshare"
	"github.com/cnibench/cnibench/stats"
)

// tcpCRRFlow does netperf TCP_CRR (netperf -t TCP_CRR -- -r N,N): per
// transaction a new connection; the client connects, sends the request
// (behind the 32-byte hello, in one send), reads the response, then reads
// until the server's FIN and closes. The server closes first, right after
// its response, as netserver does, so TIME_WAIT lands on the server and the
// client's ephemeral ports are free again as soon as its close is acked.
//
// Latency runs from the start of connect() to the last byte of the
// response; the rate (transactions per second) also pays the FIN and
// close(). Unlike netperf, which binds each socket to the next port of its
// own sequence from 5000-65535, we let connect() pick the ephemeral port
// from ip_local_port_range, so the test runs in pods whatever their range;
// with Options.PortShare, from the placement's share of it.
func tcpCRRFlow(rc *runCtx, f *flow) error {
	f.hist = stats.NewHistogram()
	size := rc.o.MessageSize
	family, sa := sockaddr(rc.ip, rc.o.Port)
	req := make([]byte, hdrLen+size)
	h := tcpHello{test: TCPCRR, session: rc.session, msgSize: uint32(size), stream: uint32(f.id)}
	h.put(req)
	resp := make([]byte, size)

	// One untimed transaction first, with a connect timeout, so an
	// unreachable server fails the run at once with a clear error. Running
	// out of local ports while the other flows set up is retried.
	deadline := time.Now().Add(connectTimeout)
	_, _, err := crrOnce(rc, f, family, sa, req, resp, deadline)
	for portExhausted(err) && time.Now().Before(deadline) && !rc.stop.Load() {
		time.Sleep(time.Millisecond)
		_, _, err = crrOnce(rc, f, family, sa, req, resp, deadline)
	}
	if err != nil {
		err = fmt.Errorf("%s: %w", rc.o.Test, err)
	}
	if !rc.ready(err) {
		return err
	}
	y := yielder{perCall: true}
	for {
		y.tick()
		start, end, err := crrOnce(rc, f, family, sa, req, resp, time.Time{})
		if rc.stop.Load() || time.Now().After(rc.measEnd) {
			return nil
		}
		measured := !start.IsZero() && !start.Before(rc.measStart)
		if err != nil {
			// Keep going (a refused or reset connection, or no free
			// local port, is one failed transaction), but do not spin
			// on a persistent failure.
			if measured {
				f.noteError(err)
			}
			time.Sleep(time.Millisecond)
			continue
		}
		if measured {
			stats.Record(f.hist, end.Sub(start))
			f.trans++
			f.completed(rc, end)
		}
	}
}

// errNotClosed: the server sent more than the response instead of closing.
var errNotClosed = errors.New("server sent data after the response instead of closing")

// crrOnce runs one connect/request/response/FIN/close transaction and
// returns when connect() started and when the response was complete.
// Errors read "connect|send|recv ADDR: cause". In Blocking mode connect()
// blocks as netperf's does, unless a deadline is given (setup only); the end
// of the run wakes it with shutdown().
func crrOnce(rc *runCtx, f *flow, family int, sa unix.Sockaddr, req, resp []byte, deadline time.Time) (start, end time.Time, err error) {
	w := rc.wait
	nonblock := w.spin || !deadline.IsZero()
	fd, err := newSocket(family, unix.SOCK_STREAM, nonblock)
	if err != nil {
		return start, end, fmt.Errorf("socket: %w", err)
	}
	if !f.fds.add(fd) {
		return start, end, fmt.Errorf("connect: %w", errStopped)
	}
	defer f.fds.close(fd)
	if rc.ports != nil {
		if err := portshare.Apply(fd, *rc.ports); err != nil {
			return start, end, err
		}
	}
	start = time.Now()
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
		return start, end, fmt.Errorf("connect %s: %w", rc.addr, err)
	}
	if err := w.send(fd, req); err != nil {
		return start, end, fmt.Errorf("send to %s: %w", rc.addr, err)
	}
	if err := w.readFull(fd, resp); err != nil {
		return start, end, fmt.Errorf("recv from %s: %w", rc.addr, err)
	}
	end = time.Now()
	// netperf's client, too, reads until the server's FIN before close().
	switch n, err := w.recv(fd, resp[:1]); {
	case err == io.EOF:
	case err != nil:
		return start, end, fmt.Errorf("recv FIN from %s: %w", rc.addr, err)
	case n > 0:
		return start, end, fmt.Errorf("recv FIN from %s: %w", rc.addr, errNotClosed)
	}
	return start, end, nil
}
