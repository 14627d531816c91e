package engine

import (
	"math"
	"testing"
	"time"
)

func TestSeqTracker(t *testing.T) {
	cases := []struct {
		seqs                []uint64
		received, ooo, gaps uint64
	}{
		{[]uint64{0, 1, 2, 3}, 4, 0, 0},
		{[]uint64{0, 1, 3, 4}, 4, 0, 1},      // 2 lost
		{[]uint64{0, 2, 1, 3}, 4, 1, 0},      // 1 late
		{[]uint64{5, 6, 7}, 3, 0, 5},         // 0..4 lost
		{[]uint64{0, 3, 1, 2, 9}, 5, 2, 5},   // 1, 2 late; 4..8 lost
		{[]uint64{0, 1, 1, 2}, 4, 1, 0},      // duplicate counts as late
		{[]uint64{10, 0, 1, 2, 11}, 5, 3, 7}, // reordered burst
		{[]uint64{}, 0, 0, 0},
	}
	for _, c := range cases {
		var tr seqTracker
		for _, s := range c.seqs {
			tr.add(s)
		}
		if tr.received != c.received || tr.outOfOrder != c.ooo || tr.gaps() != c.gaps {
			t.Errorf("%v: received %d ooo %d gaps %d, want %d %d %d",
				c.seqs, tr.received, tr.outOfOrder, tr.gaps(), c.received, c.ooo, c.gaps)
		}
	}
}

func TestLossPercent(t *testing.T) {
	cases := []struct {
		sent, received int64
		want           float64
	}{
		{100, 100, 0}, {100, 90, 10}, {100, 0, 100}, {0, 0, 0}, {100, 101, 0}, {3, 2, 100.0 / 3},
	}
	for _, c := range cases {
		if got := lossPercent(c.sent, c.received); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("lossPercent(%d, %d) = %g, want %g", c.sent, c.received, got, c.want)
		}
	}
}

// The server's session accounting, datagram by datagram: two streams, one
// late datagram, one session ignored, drops on every 5th.
func TestUDPSessions(t *testing.T) {
	var ss udpSessions
	t0 := time.Unix(1000, 0)
	feed := func(session uint64, stream uint32, seq uint64, at time.Duration, drop uint64) {
		s := ss.get(session, t0.Add(at), true)
		s.data(udpHdr{kind: kindData, session: session, stream: stream, seq: seq}, 100, t0.Add(at), drop)
	}
	for i, seq := range []uint64{0, 1, 3, 2, 4} {
		feed(7, 0, seq, time.Duration(i)*time.Millisecond, 0)
		feed(7, 1, seq, time.Duration(i)*time.Millisecond, 0)
	}
	feed(8, 0, 0, 0, 0) // another session
	r := ss.get(7, t0, false).report()
	if r.packets != 10 || r.bytes != 1000 || r.outOfOrder != 2 || r.lastNs-r.firstNs != int64(4*time.Millisecond) {
		t.Errorf("report %+v, want 10 packets, 1000 bytes, 2 out of order, 4ms", r)
	}
	if r := ss.get(99, t0, false).report(); r.packets != 0 {
		t.Errorf("unknown session reports %d packets", r.packets)
	}
	for seq := range uint64(100) {
		feed(9, 0, seq, 0, 5)
	}
	if r := ss.get(9, t0, false).report(); r.packets != 80 {
		t.Errorf("drop every 5th of 100: received %d, want 80", r.packets)
	}
}

func TestTokenBucket(t *testing.T) {
	// 1 MB/s in 1000-byte datagrams, over 2 simulated seconds, sleeping
	// exactly as told: ~2000 datagrams, and never a burst above the cap.
	now := time.Unix(0, 0)
	b := newTokenBucket(1e6, 1000, now)
	end := now.Add(2 * time.Second)
	sent := 0
	for now.Before(end) {
		if w := b.take(now, 1000); w > 0 {
			now = now.Add(w + 300*time.Microsecond) // oversleep, as real sleeps do
			continue
		}
		sent++
	}
	if sent < 1990 || sent > 2010 {
		t.Errorf("sent %d datagrams, want ~2000", sent)
	}
}

// A sender woken 15 ms late now and then (a busy machine) still keeps its
// rate, and a wake-up far later than the burst allows does not turn into a
// burst above the cap.
func TestTokenBucketLateWakeups(t *testing.T) {
	now := time.Unix(0, 0)
	b := newTokenBucket(2.5e6, 1000, now) // 20 Mbit/s
	end := now.Add(2 * time.Second)
	sent, sleeps := 0, 0
	for now.Before(end) {
		if w := b.take(now, 1000); w > 0 {
			sleeps++
			if sleeps%4 == 0 {
				w += 15 * time.Millisecond
			}
			now = now.Add(w)
			continue
		}
		sent++
	}
	if sent < 4900 || sent > 5010 {
		t.Errorf("sent %d datagrams with late wake-ups, want ~5000", sent)
	}
	now = now.Add(time.Second)
	burst := 0
	for b.take(now, 1000) == 0 {
		burst++
	}
	if burst*1000 > minBurst+1000 {
		t.Errorf("after a 1 s stall %d datagrams went back to back, want at most %d bytes", burst, minBurst)
	}
}

func TestWire(t *testing.T) {
	b := make([]byte, hdrLen)
	h := tcpHello{test: TCPCRR, session: 1 << 60, msgSize: 77, stream: 3, warmupNs: 5e9}
	h.put(b)
	got, err := parseTCPHello(b)
	if err != nil || got != h {
		t.Errorf("hello round trip: %+v %v", got, err)
	}
	b[0] ^= 1
	if _, err := parseTCPHello(b); err == nil {
		t.Error("bad magic accepted")
	}
	u := udpHdr{kind: kindReport, session: 42, stream: 9, seq: 1 << 40}
	u.put(b)
	if g, ok := parseUDPHdr(b); !ok || g != u {
		t.Errorf("udp header round trip: %+v", g)
	}
	rb := make([]byte, 40)
	r := udpReport{packets: 1, bytes: 2, outOfOrder: 3, firstNs: -4, lastNs: 5}
	r.put(rb)
	if g, err := parseUDPReport(rb); err != nil || g != r {
		t.Errorf("report round trip: %+v %v", g, err)
	}
}
