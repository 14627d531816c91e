package engine

import (
	"context"
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// UDP_STREAM client timings: each hello or report request is retried
// udpTries times, udpReplyWait apart; udpDrain lets the server empty its
// socket buffer before the report is asked for.
const (
	udpTries     = 5
	udpReplyWait = 300 * time.Millisecond
	udpDrain     = 50 * time.Millisecond
)

// measSession and warmSession keep warmup datagrams out of the measured
// counters: the server keeps counters per session id.
func (rc *runCtx) measSession() uint64 { return rc.session }
func (rc *runCtx) warmSession() uint64 { return rc.session ^ 1<<63 }

// udpStreamFlow sends MessageSize datagrams (header + padding) on a
// connected socket, a batch per sendmmsg (udp_batch.go), paced by a token
// bucket when a rate is set. Stream 0 first checks that a server answers, so
// a missing one is an error rather than 100% loss.
func udpStreamFlow(rc *runCtx, f *flow) error {
	fd, err := rc.dialUDP(f)
	if err == nil && f.id == 0 {
		err = udpHello(rc, fd)
	}
	if err == nil && rc.o.UDPGSO {
		if err = enableGSO(fd, rc.o.MessageSize); err != nil {
			err = fmt.Errorf("%s: UDP GSO (UDP_SEGMENT): %w", rc.o.Test, err)
		}
	}
	if !rc.ready(err) {
		return err
	}
	f.fd = fd
	b := newUDPBatch(rc.o.MessageSize, uint32(f.id), rc.o.UDPGSO)
	session := rc.warmSession()
	measuring := false
	var tb *tokenBucket
	if rc.o.RateBitsPerSec > 0 {
		perStream := float64(rc.o.RateBitsPerSec) / 8 / float64(rc.o.Streams)
		tb = newTokenBucket(perStream, b.msgBytes(), time.Now())
	}
	// A batch takes a while: read the clock at every turn.
	y := yielder{perCall: true}
	for seq := uint64(0); ; {
		y.tick()
		now := time.Now()
		if !now.Before(rc.measEnd) || rc.stop.Load() {
			return nil
		}
		if !measuring && !now.Before(rc.measStart) {
			measuring, seq, session = true, 0, rc.measSession()
		}
		n := b.msgs()
		if tb != nil {
			var wait time.Duration
			if n, wait = tb.takeUpTo(now, b.msgBytes(), n); n == 0 {
				time.Sleep(min(wait, rc.measEnd.Sub(now)))
				continue
			}
		}
		b.stamp(n, session, seq)
		sent, err := b.send(fd, n)
		pkts := int64(sent * b.segs)
		seq += uint64(pkts)
		if measuring {
			f.pktsSent += pkts
			f.bytesSent += pkts * int64(b.size)
		}
		if err != nil {
			if err == unix.EINTR {
				continue
			}
			if rc.aborted.Load() {
				return nil
			}
			if err == unix.EINVAL && rc.o.UDPGSO {
				return fmt.Errorf("%s: send with UDP GSO: %w (a message of %d B and its headers must fit the path MTU)",
					rc.o.Test, err, b.size)
			}
			// ENOBUFS, or ECONNREFUSED from an ICMP error: a batch not
			// sent, counted as one error, and the sender carries on.
			if measuring {
				f.noteError(fmt.Errorf("send to %s: %w", rc.addr, err))
			}
		}
	}
}

// tokenBucket paces a sender at rate bytes/s. Its burst is ~2 ms of the
// rate, but at least 64 KiB: a sender woken 10-20 ms late on a busy machine
// (a paced 20 Mbit/s sender under three CPU hogs on 2 cores fell 15% short
// with 2 ms) makes up the time, while a burst stays well inside a socket's
// default receive buffer (208 KiB) so the catch-up is not itself lost.
type tokenBucket struct {
	rate   float64 // bytes per nanosecond
	cap    float64
	tokens float64
	last   time.Time
}

// minBurst is the bucket's smallest capacity in bytes.
const minBurst = 64 << 10

func newTokenBucket(bytesPerSec float64, size int, now time.Time) *tokenBucket {
	rate := bytesPerSec / 1e9
	c := max(2*float64(size), minBurst, rate*float64(2*time.Millisecond))
	return &tokenBucket{rate: rate, cap: c, tokens: float64(size), last: now}
}

// take spends size bytes of tokens, or says how long to wait for them.
func (b *tokenBucket) take(now time.Time, size int) time.Duration {
	b.tokens = min(b.cap, b.tokens+float64(now.Sub(b.last))*b.rate)
	b.last = now
	if b.tokens >= float64(size) {
		b.tokens -= float64(size)
		return 0
	}
	return time.Duration((float64(size) - b.tokens) / b.rate)
}

// takeUpTo spends tokens for as many as n units of size bytes as the bucket
// holds: how many, or 0 and how long to wait for the first.
func (b *tokenBucket) takeUpTo(now time.Time, size, n int) (int, time.Duration) {
	if wait := b.take(now, size); wait > 0 {
		return 0, wait
	}
	k := 1
	for k < n && b.tokens >= float64(size) {
		b.tokens -= float64(size)
		k++
	}
	return k, 0
}

// udpExchange sends req on the connected socket fd until a datagram that
// accept likes comes back, trying udpTries times.
func udpExchange(rc *runCtx, fd int, req []byte, accept func([]byte) bool) error {
	if err := setRecvTimeout(fd, udpReplyWait/4); err != nil {
		return err
	}
	buf := make([]byte, 65536)
	for range udpTries {
		if rc.aborted.Load() {
			return errStopped
		}
		if err := blocking.send(fd, req); err != nil {
			return err
		}
		deadline := time.Now().Add(udpReplyWait)
		for time.Now().Before(deadline) && !rc.aborted.Load() {
			n, err := blocking.recv(fd, buf)
			if err == errTimeout {
				continue
			}
			if err != nil {
				return err
			}
			if accept(buf[:n]) {
				return nil
			}
		}
	}
	return fmt.Errorf("no answer after %d tries", udpTries)
}

// udpHello checks a UDP_STREAM server is there.
func udpHello(rc *runCtx, fd int) error {
	req := make([]byte, hdrLen)
	h := udpHdr{kind: kindHello, session: rc.measSession()}
	h.put(req)
	err := udpExchange(rc, fd, req, func(b []byte) bool {
		g, ok := parseUDPHdr(b)
		return ok && g.kind == kindHelloAck && g.session == h.session
	})
	if err != nil {
		return fmt.Errorf("%s: server %s: %w", rc.o.Test, rc.addr, err)
	}
	return nil
}

// udpStreamReport asks the server for its counters of the measured session,
// on stream 0's socket once every sender has stopped.
func udpStreamReport(ctx context.Context, rc *runCtx) error {
	fd := rc.flows[0].fd
	t := time.NewTimer(udpDrain)
	select {
	case <-t.C:
	case <-ctx.Done():
		t.Stop()
		return ctx.Err()
	}
	req := make([]byte, hdrLen)
	h := udpHdr{kind: kindReportReq, session: rc.measSession()}
	h.put(req)
	var rep udpReport
	var perr error
	err := udpExchange(rc, fd, req, func(b []byte) bool {
		g, ok := parseUDPHdr(b)
		if !ok || g.kind != kindReport || g.session != h.session {
			return false
		}
		rep, perr = parseUDPReport(b[hdrLen:])
		return true
	})
	if err == nil {
		err = perr
	}
	if err != nil {
		return fmt.Errorf("%s: report from server %s: %w", rc.o.Test, rc.addr, err)
	}
	rc.report = rep
	return nil
}

// fillUDPStream reports loss as iperf3 does, from the receiver's count:
// 1 - received/sent. Throughput is delivered bits over the measured
// interval; OfferedBitsSec is what the senders pushed.
func fillUDPStream(rc *runCtx, r *Result) error {
	for i := range rc.flows {
		r.PacketsSent += rc.flows[i].pktsSent
		r.BytesSent += rc.flows[i].bytesSent
	}
	rep := rc.report
	r.PacketsReceived = int64(rep.packets)
	r.BytesReceived = int64(rep.bytes)
	r.PacketsOutOfOrder = int64(rep.outOfOrder)
	r.LossPercent = lossPercent(r.PacketsSent, r.PacketsReceived)
	if rep.packets > 0 {
		r.ReceiverSecondsRaw = float64(rep.lastNs-rep.firstNs) / 1e9
	}
	if r.Seconds > 0 {
		r.ThroughputBitsSec = float64(r.BytesReceived) * 8 / r.Seconds
		r.OfferedBitsSec = float64(r.BytesSent) * 8 / r.Seconds
	}
	return nil
}

// lossPercent is 100*(1 - received/sent), clamped to [0, 100] since
// duplicated datagrams can make received exceed sent.
func lossPercent(sent, received int64) float64 {
	if sent <= 0 {
		return 0
	}
	return min(100, max(0, 100*(1-float64(received)/float64(sent))))
}
