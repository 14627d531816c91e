package engine

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"time"

	"golang.org/x/sys/unix"
)

// tcpStreamFlow writes MessageSize buffers back to back, as iperf3 does:
// one preallocated buffer, no copies, default socket buffers, Nagle on,
// every stream in turn from one pump (streampump.go). The server counts
// what arrives after the warmup and, once the client shuts its write side,
// returns its count in a trailer.
func tcpStreamFlow(rc *runCtx, f *flow) error {
	fd, err := rc.dialTCP(f)
	var c net.Conn
	if err == nil {
		if c, err = netConn(fd); err == nil {
			if err = nagleOn(c); err != nil {
				c.Close()
			}
		}
		if err != nil {
			err = rc.failed(f, "set up connection to", err)
		}
	}
	if !rc.ready(err) {
		return err
	}
	defer c.Close()
	buf := make([]byte, max(rc.o.MessageSize, hdrLen))
	// The hello carries the time left until measStart, so the server starts
	// counting when the client does (give or take one-way latency).
	warm := max(time.Until(rc.measStart), 0)
	h := tcpHello{test: TCPStream, session: rc.session, msgSize: uint32(rc.o.MessageSize),
		stream: uint32(f.id), warmupNs: uint64(warm)}
	h.put(buf)
	msg := buf[:rc.o.MessageSize]
	if _, err := c.Write(buf[:hdrLen]); err != nil {
		_ = rc.pumpTurn(f, -1, msg) // the others' pump runs without it
		return rc.failed(f, "send to", err)
	}
	if err := rc.pumpTurn(f, fd, msg); err != nil {
		return err
	}
	return tcpStreamEnd(rc, f, fd, c)
}

// tcpStreamEnd shuts the stream's write side and reads the server's count.
func tcpStreamEnd(rc *runCtx, f *flow, fd int, c net.Conn) error {
	if err := unix.Shutdown(fd, unix.SHUT_WR); err != nil {
		return rc.failed(f, "shutdown", err)
	}
	var trailer [trailLen]byte
	if _, err := io.ReadFull(c, trailer[:]); err != nil {
		if rc.aborted.Load() {
			return nil
		}
		return fmt.Errorf("%s: stream %d: no byte count from server %s: %w", rc.o.Test, f.id, rc.addr, err)
	}
	f.srvBytes = int64(binary.BigEndian.Uint64(trailer[0:]))
	f.srvNs = int64(binary.BigEndian.Uint64(trailer[8:]))
	return nil
}

// fillTCPStream uses the receiver's view, as iperf3's "receiver" line: the
// bytes the server counted, over the longest server-side receive interval
// (warmup end to EOF, so data still in flight at the end is included with
// the time it took to arrive).
func fillTCPStream(rc *runCtx, r *Result) error {
	var maxNs int64
	for i := range rc.flows {
		f := &rc.flows[i]
		r.BytesSent += f.bytesSent
		r.BytesReceived += f.srvBytes
		maxNs = max(maxNs, f.srvNs)
	}
	r.ReceiverSecondsRaw = float64(maxNs) / 1e9
	if maxNs > 0 {
		r.ThroughputBitsSec = float64(r.BytesReceived) * 8 / r.ReceiverSecondsRaw
	}
	return nil
}

// nagleOn undoes the TCP_NODELAY Go sets on every TCP net.Conn: iperf3 and
// netperf stream with Nagle on, so a write's short tail waits to join the
// next write's segments instead of going out alone.
func nagleOn(c net.Conn) error {
	if tc, ok := c.(*net.TCPConn); ok {
		return tc.SetNoDelay(false)
	}
	return nil
}
