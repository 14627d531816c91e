package engine

import (
	"encoding/binary"
	"fmt"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cnibench/cnibench/stats"
)

// udpRRTimeout is how long a UDP_RR flow waits for a response before it
// counts the transaction as lost (in Errors) and sends the next request.
var udpRRTimeout = time.Second

// udpRRFlow does netperf UDP_RR on a connected socket. The server echoes
// datagrams as they are, so requests carry no header; a request of 8 bytes
// or more starts with a sequence number so that a late answer to a timed-out
// request is not taken for the current one, and the setup probe has a
// different length so a late probe echo is never counted either.
func udpRRFlow(rc *runCtx, f *flow) error {
	f.hist = stats.NewHistogram()
	size := rc.o.MessageSize
	fd, err := rc.dialUDP(f)
	if err == nil {
		err = udpRRProbe(rc, fd, size)
		if err == nil {
			err = setRecvTimeout(fd, udpRRTimeout)
		}
	}
	if !rc.ready(err) {
		return err
	}
	req, resp := make([]byte, size), make([]byte, size+64)
	w := rc.wait
	w.timeout = udpRRTimeout
	withSeq := size >= 8
	var y yielder
	for seq := uint64(1); ; seq++ {
		y.tick()
		if withSeq {
			binary.BigEndian.PutUint64(req, seq)
		}
		start := time.Now()
		measured := !start.Before(rc.measStart)
		err := w.send(fd, req)
		for err == nil {
			var n int
			n, err = w.recv(fd, resp)
			if err == nil && n == size && (!withSeq || binary.BigEndian.Uint64(resp) == seq) {
				break
			}
		}
		end := time.Now()
		if rc.stop.Load() || end.After(rc.measEnd) {
			return nil
		}
		switch {
		case err == nil:
			if measured {
				stats.Record(f.hist, end.Sub(start))
				f.trans++
			}
		case err == errTimeout || err == unix.ECONNREFUSED:
			// Lost request or response, or no server for a moment:
			// one failed transaction, then carry on.
			if measured {
				f.noteError(fmt.Errorf("no response from %s: %w", rc.addr, err))
			}
			if err == unix.ECONNREFUSED {
				time.Sleep(10 * time.Millisecond)
			}
		default:
			return rc.failed(f, "exchange with", err)
		}
	}
}

// udpRRProbe checks that the server echoes, with a datagram one byte longer
// (or shorter) than a request.
func udpRRProbe(rc *runCtx, fd, size int) error {
	n := size + 1
	if n > maxUDPRRSize {
		n = size - 1
	}
	probe := make([]byte, n)
	err := udpExchange(rc, fd, probe, func(b []byte) bool { return len(b) == n })
	if err != nil {
		return fmt.Errorf("%s: server %s: %w", rc.o.Test, rc.addr, err)
	}
	return nil
}
