package engine

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Wire protocol. Every integer is big-endian. There is no control
// connection: each data connection or datagram carries what the server needs,
// so one fixed port per test is enough and tests work through a Service VIP.
//
// TCP (all three tests): the client opens with a 32-byte hello
//
//	0 magic u32 | 4 test u8 | 5 flags u8 | 6 reserved u16 | 8 session u64 |
//	16 message size u32 | 20 stream u32 | 24 warmup ns u64
//
// TCP_STREAM then sends data until it shuts down its write side; the server
// counts only bytes that arrive once warmup ns have passed since the hello
// and, at EOF, answers with a 16-byte trailer (bytes u64 | receive ns u64).
// TCP_RR sends requests of message size; the server answers each with the
// same size. TCP_CRR sends hello+request on a fresh connection per
// transaction; the server answers and closes at once (first, as netserver
// does), and the client reads until that FIN, then closes.
//
// UDP_STREAM datagrams start with a 32-byte header
//
//	0 magic u32 | 4 kind u8 | 5 reserved [3] | 8 session u64 | 16 stream u32 |
//	20 reserved u32 | 24 sequence u64
//
// kind is data, hello (answered by helloAck) or report request (answered by
// a report: the header followed by packets, bytes, out-of-order u64 and
// first/last arrival ns i64). Warmup and measurement use different session
// ids, so the server's counters for the measured session never see warmup.
//
// UDP_RR datagrams carry no header: the server echoes each one back, as
// netserver does, so a 1-byte request stays 1 byte on the wire.
const (
	magic     uint32 = 0x434e4231 // "CNB1"
	hdrLen           = 32
	trailLen         = 16
	reportLen        = hdrLen + 40
)

// UDP_STREAM datagram kinds.
const (
	kindData      byte = 1
	kindHello     byte = 2
	kindHelloAck  byte = 3
	kindReportReq byte = 4
	kindReport    byte = 5
)

var errBadHello = errors.New("bad hello")

// testCode gives each test a stable one-byte code for the TCP hello.
func testCode(t Test) byte {
	for i, x := range Tests {
		if x == t {
			return byte(i + 1)
		}
	}
	return 0
}

// tcpHello is the first thing a client writes on every TCP data connection.
type tcpHello struct {
	test     Test
	session  uint64
	msgSize  uint32
	stream   uint32
	warmupNs uint64
}

func (h *tcpHello) put(b []byte) {
	_ = b[hdrLen-1]
	binary.BigEndian.PutUint32(b[0:], magic)
	b[4] = testCode(h.test)
	b[5], b[6], b[7] = 0, 0, 0
	binary.BigEndian.PutUint64(b[8:], h.session)
	binary.BigEndian.PutUint32(b[16:], h.msgSize)
	binary.BigEndian.PutUint32(b[20:], h.stream)
	binary.BigEndian.PutUint64(b[24:], h.warmupNs)
}

func parseTCPHello(b []byte) (tcpHello, error) {
	var h tcpHello
	if len(b) < hdrLen || binary.BigEndian.Uint32(b) != magic {
		return h, errBadHello
	}
	c := int(b[4])
	if c < 1 || c > len(Tests) {
		return h, errBadHello
	}
	h.test = Tests[c-1]
	h.session = binary.BigEndian.Uint64(b[8:])
	h.msgSize = binary.BigEndian.Uint32(b[16:])
	h.stream = binary.BigEndian.Uint32(b[20:])
	h.warmupNs = binary.BigEndian.Uint64(b[24:])
	return h, nil
}

// udpHdr is the UDP_STREAM datagram header.
type udpHdr struct {
	kind    byte
	session uint64
	stream  uint32
	seq     uint64
}

func (h *udpHdr) put(b []byte) {
	_ = b[hdrLen-1]
	binary.BigEndian.PutUint32(b[0:], magic)
	b[4] = h.kind
	b[5], b[6], b[7] = 0, 0, 0
	binary.BigEndian.PutUint64(b[8:], h.session)
	binary.BigEndian.PutUint32(b[16:], h.stream)
	binary.BigEndian.PutUint32(b[20:], 0)
	binary.BigEndian.PutUint64(b[24:], h.seq)
}

func parseUDPHdr(b []byte) (udpHdr, bool) {
	if len(b) < hdrLen || binary.BigEndian.Uint32(b) != magic {
		return udpHdr{}, false
	}
	return udpHdr{
		kind:    b[4],
		session: binary.BigEndian.Uint64(b[8:]),
		stream:  binary.BigEndian.Uint32(b[16:]),
		seq:     binary.BigEndian.Uint64(b[24:]),
	}, true
}

// udpReport is the server's view of one UDP_STREAM session.
type udpReport struct {
	packets, bytes, outOfOrder uint64
	firstNs, lastNs            int64 // arrival times on the server's clock
}

func (r *udpReport) put(b []byte) {
	_ = b[39]
	binary.BigEndian.PutUint64(b[0:], r.packets)
	binary.BigEndian.PutUint64(b[8:], r.bytes)
	binary.BigEndian.PutUint64(b[16:], r.outOfOrder)
	binary.BigEndian.PutUint64(b[24:], uint64(r.firstNs))
	binary.BigEndian.PutUint64(b[32:], uint64(r.lastNs))
}

func parseUDPReport(b []byte) (udpReport, error) {
	if len(b) < 40 {
		return udpReport{}, fmt.Errorf("short report (%d bytes)", len(b))
	}
	return udpReport{
		packets:    binary.BigEndian.Uint64(b[0:]),
		bytes:      binary.BigEndian.Uint64(b[8:]),
		outOfOrder: binary.BigEndian.Uint64(b[16:]),
		firstNs:    int64(binary.BigEndian.Uint64(b[24:])),
		lastNs:     int64(binary.BigEndian.Uint64(b[32:])),
	}, nil
}
