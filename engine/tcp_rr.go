package engine

import (
	"time"

	"golang.org/x/sys/unix"

	"github.com/cnibench/cnibench/stats"
)

// tcpRRFlow does netperf TCP_RR on one connection: a MessageSize request,
// a MessageSize response, back to back, with TCP_NODELAY. In Blocking mode
// the thread sleeps in recv() for every response, so each transaction pays
// the wakeups netperf pays.
func tcpRRFlow(rc *runCtx, f *flow) error {
	f.hist = stats.NewHistogram()
	size := rc.o.MessageSize
	buf := make([]byte, max(size, hdrLen))
	fd, err := rc.dialTCP(f)
	if err == nil {
		err = unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
		if err == nil {
			h := tcpHello{test: TCPRR, session: rc.session, msgSize: uint32(size), stream: uint32(f.id)}
			h.put(buf)
			err = blocking.send(fd, buf[:hdrLen])
		}
		if err != nil {
			err = rc.failed(f, "set up connection to", err)
		}
	}
	if !rc.ready(err) {
		return err
	}
	req, resp := make([]byte, size), buf[:size]
	w := rc.wait
	var y yielder
	for {
		y.tick()
		start := time.Now()
		if err := w.send(fd, req); err != nil {
			return rc.failed(f, "send to", err)
		}
		if err := w.readFull(fd, resp); err != nil {
			return rc.failed(f, "recv from", err)
		}
		end := time.Now()
		if end.After(rc.measEnd) {
			return nil
		}
		if !start.Before(rc.measStart) {
			stats.Record(f.hist, end.Sub(start))
			f.trans++
			f.completed(rc, end)
		}
	}
}
