package engine

import (
	"encoding/binary"
	"unsafe"

	"golang.org/x/sys/unix"
)

// UDP_STREAM sends in batches: one sendmmsg(2) carries several datagrams,
// so the sender pays one syscall entry, one clock read and one loop turn
// per batch instead of per datagram. The datagrams on the wire are the same
// as with one send() each (iperf3 3.12 writes one per call). With UDP GSO
// (UDP_SEGMENT) each message of the batch is itself a run of datagrams that
// the kernel splits late, after routing: a different, cheaper path through
// the stack, hence an option recorded in the results.
const (
	// batchBytes bounds a batch: about a third of a default socket send
	// buffer (wmem_default 208 KiB), so one blocking sendmmsg never waits
	// for much more than one batch to drain.
	batchBytes = 64 << 10
	// maxBatch bounds the messages per sendmmsg.
	maxBatch = 64
	// gsoBytes and maxGSOSegs bound one GSO message: the kernel takes at
	// most 64 segments (UDP_MAX_SEGMENTS before Linux 6.9) and one UDP
	// payload of 64 KiB less the headers.
	gsoBytes   = 65000
	maxGSOSegs = 64
)

// udpBatch holds the datagrams of one sendmmsg: msgs messages, each of
// segs datagrams of size bytes laid end to end (segs > 1 only with GSO).
type udpBatch struct {
	size, segs int
	bufs       [][]byte
	iovs       []unix.Iovec
	hdrs       []unix.Mmsghdr
}

// batchShape says how many datagrams go in one message (segs) and how many
// messages in one batch (msgs) for datagrams of size bytes.
func batchShape(size int, gso bool) (segs, msgs int) {
	segs = 1
	if gso {
		segs = min(maxGSOSegs, max(1, gsoBytes/size))
	}
	msgs = min(maxBatch, max(1, batchBytes/(segs*size)))
	return segs, msgs
}

// newUDPBatch builds a batch of data datagrams for one stream; every
// datagram carries its own header (stamp fills session and sequence).
func newUDPBatch(size int, stream uint32, gso bool) *udpBatch {
	segs, msgs := batchShape(size, gso)
	b := &udpBatch{size: size, segs: segs}
	b.bufs = make([][]byte, msgs)
	b.iovs = make([]unix.Iovec, msgs)
	b.hdrs = make([]unix.Mmsghdr, msgs)
	h := udpHdr{kind: kindData, stream: stream}
	for i := range b.bufs {
		buf := make([]byte, segs*size)
		for s := range segs {
			h.put(buf[s*size:])
		}
		b.bufs[i] = buf
		b.iovs[i].Base = &buf[0]
		b.iovs[i].SetLen(len(buf))
		b.hdrs[i].Hdr.Iov = &b.iovs[i]
		b.hdrs[i].Hdr.SetIovlen(1)
	}
	return b
}

// msgs is the number of messages one batch holds.
func (b *udpBatch) msgs() int { return len(b.bufs) }

// msgBytes is the payload of one message (all its datagrams).
func (b *udpBatch) msgBytes() int { return b.segs * b.size }

// stamp numbers the datagrams of the first n messages seq, seq+1, ... and
// gives them the session id.
func (b *udpBatch) stamp(n int, session, seq uint64) {
	for _, buf := range b.bufs[:n] {
		for off := 0; off < len(buf); off += b.size {
			binary.BigEndian.PutUint64(buf[off+8:], session)
			binary.BigEndian.PutUint64(buf[off+24:], seq)
			seq++
		}
	}
}

// send hands the first n messages to the kernel in one sendmmsg and returns
// how many it took. An error after the first message is not reported by
// the kernel (it returns the count); the next call meets it again.
func (b *udpBatch) send(fd, n int) (int, error) {
	r, _, e := unix.Syscall6(unix.SYS_SENDMMSG, uintptr(fd), uintptr(unsafe.Pointer(&b.hdrs[0])), uintptr(n),
		unix.MSG_NOSIGNAL, 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

// enableGSO asks the kernel to split each message sent on fd into
// datagrams of size bytes (UDP_SEGMENT).
func enableGSO(fd, size int) error {
	return unix.SetsockoptInt(fd, unix.IPPROTO_UDP, unix.UDP_SEGMENT, size)
}
