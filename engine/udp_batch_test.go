package engine

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestBatchShape(t *testing.T) {
	for _, c := range []struct {
		size       int
		gso        bool
		segs, msgs int
	}{
		{1400, false, 1, 46},  // 64 KiB of 1400 B datagrams
		{1400, true, 46, 1},   // one GSO message of 46 datagrams
		{32, false, 1, 64},    // capped at maxBatch
		{32, true, 64, 32},    // 64 segments at most per message
		{65000, false, 1, 1},  // one datagram per batch
		{65000, true, 1, 1},   // GSO cannot split it further
		{40000, true, 1, 1},   // two would pass the 64 KiB payload limit
		{9000, false, 1, 7},   // jumbo datagrams
		{16000, true, 4, 1},   // 4 x 16000 = 64000 B
		{21000, false, 1, 3},  // 3 x 21000 B
		{33000, false, 1, 1},  // one per batch
		{1000, true, 64, 1},   // 64 x 1000 B
		{2000, false, 1, 32},  // 32 x 2000 B
		{100000, false, 1, 1}, // larger than the batch: still one
	} {
		segs, msgs := batchShape(c.size, c.gso)
		if segs != c.segs || msgs != c.msgs {
			t.Errorf("batchShape(%d, gso=%v) = %d segs x %d msgs, want %d x %d", c.size, c.gso, segs, msgs, c.segs, c.msgs)
		}
	}
}

// stamp numbers every datagram of the first n messages in order, including
// each GSO segment, and leaves the rest of the batch alone.
func TestUDPBatchStamp(t *testing.T) {
	for _, gso := range []bool{false, true} {
		b := newUDPBatch(1000, 7, gso)
		n := min(2, b.msgs())
		b.stamp(b.msgs(), 1, 0)
		b.stamp(n, 42, 100)
		want := uint64(100)
		for i, buf := range b.bufs {
			if len(buf) != b.segs*1000 || b.iovs[i].Len != uint64(len(buf)) {
				t.Fatalf("gso=%v: message %d is %d B (iov %d), want %d", gso, i, len(buf), b.iovs[i].Len, b.segs*1000)
			}
			for off := 0; off < len(buf); off += 1000 {
				h, ok := parseUDPHdr(buf[off:])
				if !ok || h.kind != kindData || h.stream != 7 {
					t.Fatalf("gso=%v: message %d offset %d: bad header %+v", gso, i, off, h)
				}
				if i >= n {
					if h.session != 1 {
						t.Errorf("gso=%v: message %d beyond n restamped: %+v", gso, i, h)
					}
					continue
				}
				if h.session != 42 || h.seq != want {
					t.Errorf("gso=%v: message %d offset %d: session %d seq %d, want 42 and %d", gso, i, off, h.session, h.seq, want)
				}
				want++
			}
		}
		if got := want - 100; got != uint64(n*b.segs) {
			t.Errorf("gso=%v: stamped %d datagrams, want %d", gso, got, n*b.segs)
		}
	}
}

// One sendmmsg over loopback delivers every datagram of the batch, whole and
// in order; with GSO the kernel splits each message into datagrams of the
// message size.
func TestUDPBatchSend(t *testing.T) {
	for _, gso := range []bool{false, true} {
		rx, tx := udpPair(t)
		if gso {
			if err := enableGSO(tx, 1000); err != nil {
				t.Fatalf("UDP_SEGMENT: %v", err)
			}
		}
		b := newUDPBatch(1000, 3, gso)
		n := min(3, b.msgs())
		b.stamp(n, 9, 0)
		sent, err := b.send(tx, n)
		if err != nil || sent != n {
			t.Fatalf("gso=%v: sent %d of %d: %v", gso, sent, n, err)
		}
		buf := make([]byte, 65536)
		for want := range uint64(n * b.segs) {
			m, err := blocking.recv(rx, buf)
			if err != nil {
				t.Fatalf("gso=%v: datagram %d: %v", gso, want, err)
			}
			h, ok := parseUDPHdr(buf[:m])
			if m != 1000 || !ok || h.seq != want || h.session != 9 || h.stream != 3 {
				t.Fatalf("gso=%v: datagram %d: %d B, header %+v", gso, want, m, h)
			}
		}
	}
}

// udpPair is a receiving socket and a sender connected to it on loopback.
func udpPair(t *testing.T) (rx, tx int) {
	t.Helper()
	rx, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(rx) })
	if err := unix.Bind(rx, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := setRecvTimeout(rx, time.Second); err != nil {
		t.Fatal(err)
	}
	sa, err := unix.Getsockname(rx)
	if err != nil {
		t.Fatal(err)
	}
	tx, err = unix.Socket(unix.AF_INET, unix.SOCK_DGRAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(tx) })
	if err := unix.Connect(tx, sa); err != nil {
		t.Fatal(err)
	}
	return rx, tx
}

// takeUpTo hands out whole units the bucket holds, at most n, and a wait
// when it holds none.
func TestTokenBucketTakeUpTo(t *testing.T) {
	now := time.Unix(0, 0)
	b := newTokenBucket(1e6, 1000, now) // starts with one datagram's tokens
	if k, w := b.takeUpTo(now, 1000, 10); k != 1 || w != 0 {
		t.Fatalf("first take: %d, wait %s; want 1, 0", k, w)
	}
	now = now.Add(3500 * time.Microsecond) // 3500 B of tokens
	if k, w := b.takeUpTo(now, 1000, 10); k != 3 || w != 0 {
		t.Fatalf("after 3.5 ms: %d, wait %s; want 3, 0", k, w)
	}
	if k, w := b.takeUpTo(now, 1000, 10); k != 0 || w != 500*time.Microsecond {
		t.Fatalf("empty bucket: %d, wait %s; want 0, 500µs", k, w)
	}
	now = now.Add(time.Second) // capped at the burst: 64 KiB
	if k, _ := b.takeUpTo(now, 1000, 100); k != minBurst/1000 {
		t.Fatalf("after 1 s: %d, want the cap of %d", k, minBurst/1000)
	}
	now = now.Add(time.Second)
	if k, _ := b.takeUpTo(now, 1000, 5); k != 5 {
		t.Fatalf("limited to 5: got %d", k)
	}
}
