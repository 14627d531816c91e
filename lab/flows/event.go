package flows

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"time"
)

// Direction is where on the node the event was seen.
type Direction uint8

const (
	// FromPod: the node side of a pod veth, ingress (the pod sent it).
	FromPod Direction = 0
	// ToPod: the node side of a pod veth, egress (delivered to the pod).
	ToPod Direction = 1
	// Forward: netfilter's forward hook of the node (NFLOG).
	Forward Direction = 2
)

func (d Direction) String() string {
	switch d {
	case FromPod:
		return "from-pod"
	case ToPod:
		return "to-pod"
	case Forward:
		return "forward"
	}
	return fmt.Sprintf("dir-%d", uint8(d))
}

// Verdict is what the datapath had decided when the event was taken.
// Both kinds observe after the node's other programs / filter chains, so
// a packet they see was not dropped by those: Forwarded.
type Verdict uint8

const Forwarded Verdict = 0

func (v Verdict) String() string {
	if v == Forwarded {
		return "forwarded"
	}
	return fmt.Sprintf("verdict-%d", uint8(v))
}

// TCP flag bits of Event.TCPFlags (the TCP header's flags byte).
const (
	FlagFIN = 0x01
	FlagSYN = 0x02
	FlagRST = 0x04
	FlagACK = 0x10
)

// Event kinds, the keys of Counts.ByKind: what made the packet an event.
const (
	KindSYN    = "tcp-syn"    // SYN without ACK: a connection opens
	KindSYNACK = "tcp-synack" // the server's answer (eBPF only: NFLOG logs ctstate NEW)
	KindFIN    = "tcp-fin"
	KindRST    = "tcp-rst"
	KindUDP    = "udp-new" // first packet of a UDP flow
	KindOther  = "other"
)

// Event is one flow event, decoded.
type Event struct {
	// Time is the kernel's (EBPF: bpf_ktime_get_ns) or, for NFLOG, the
	// packet's timestamp when it had one, else when the batch arrived.
	Time     time.Time
	Src, Dst netip.AddrPort
	Proto    uint8 // 6 TCP, 17 UDP
	Ifindex  uint32
	Dir      Direction
	TCPFlags uint8
	Verdict  Verdict
}

// Kind classifies e for Counts.ByKind. RST wins over FIN, FIN over SYN
// (a packet can carry several).
func (e Event) Kind() string {
	switch {
	case e.Proto == 17:
		return KindUDP
	case e.Proto != 6:
		return KindOther
	case e.TCPFlags&FlagRST != 0:
		return KindRST
	case e.TCPFlags&FlagFIN != 0:
		return KindFIN
	case e.TCPFlags&FlagSYN != 0 && e.TCPFlags&FlagACK != 0:
		return KindSYNACK
	case e.TCPFlags&FlagSYN != 0:
		return KindSYN
	}
	return KindOther
}

func (e Event) String() string {
	proto := map[uint8]string{6: "tcp", 17: "udp"}[e.Proto]
	if proto == "" {
		proto = fmt.Sprintf("proto-%d", e.Proto)
	}
	return fmt.Sprintf("%s %s %s -> %s if %d %s %s", e.Time.UTC().Format(time.RFC3339Nano), proto, e.Src, e.Dst, e.Ifindex, e.Dir, e.Kind())
}

// rawEvent mirrors struct flow_event of bpf/flows.c (TestEventLayout).
type rawEvent struct {
	TsNs     uint64
	Saddr    [4]byte
	Daddr    [4]byte
	Sport    [2]byte
	Dport    [2]byte
	Ifindex  uint32
	Proto    uint8
	Dir      uint8
	TCPFlags uint8
	Verdict  uint8
	Pad      uint32
}

const rawEventSize = 32

// decodeRaw decodes one ring buffer record (host byte order for the
// integers, network order for addresses and ports, as the C code stores
// them); mono converts the kernel's CLOCK_MONOTONIC time to wall time.
func decodeRaw(b []byte, mono func(ns uint64) time.Time) (Event, error) {
	if len(b) < rawEventSize {
		return Event{}, fmt.Errorf("flows: ring buffer record of %d bytes, want %d", len(b), rawEventSize)
	}
	var r rawEvent
	r.TsNs = binary.NativeEndian.Uint64(b[0:])
	copy(r.Saddr[:], b[8:12])
	copy(r.Daddr[:], b[12:16])
	copy(r.Sport[:], b[16:18])
	copy(r.Dport[:], b[18:20])
	r.Ifindex = binary.NativeEndian.Uint32(b[20:])
	r.Proto, r.Dir, r.TCPFlags, r.Verdict = b[24], b[25], b[26], b[27]
	return Event{
		Time:     mono(r.TsNs),
		Src:      netip.AddrPortFrom(netip.AddrFrom4(r.Saddr), binary.BigEndian.Uint16(r.Sport[:])),
		Dst:      netip.AddrPortFrom(netip.AddrFrom4(r.Daddr), binary.BigEndian.Uint16(r.Dport[:])),
		Proto:    r.Proto,
		Ifindex:  r.Ifindex,
		Dir:      Direction(r.Dir),
		TCPFlags: r.TCPFlags,
		Verdict:  Verdict(r.Verdict),
	}, nil
}
