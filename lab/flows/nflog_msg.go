package flows

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/mdlayher/netlink"
)

// The NFLOG netlink protocol (include/uapi/linux/netfilter/
// nfnetlink_log.h): messages of subsystem NFNL_SUBSYS_ULOG, each starting
// with a struct nfgenmsg (family, version, group in network order).

const (
	nfnlSubsysULOG  = 4
	nfulnlMsgPacket = nfnlSubsysULOG<<8 | 0
	nfulnlMsgConfig = nfnlSubsysULOG<<8 | 1

	nfulaCfgCmd     = 1
	nfulaCfgMode    = 2
	nfulaCfgNlbufsz = 3
	nfulaCfgTimeout = 4
	nfulaCfgQthresh = 5
	nfulaCfgFlags   = 6

	cfgCmdBind   = 1
	cfgCmdUnbind = 2

	copyPacket = 2      // NFULNL_COPY_PACKET
	cfgFlagSeq = 0x0001 // NFULNL_CFG_F_SEQ: a per-group sequence number

	nfulaPacketHdr = 1
	nfulaTimestamp = 3
	nfulaIfIndev   = 4
	nfulaIfOutdev  = 5
	nfulaPayload   = 9
	nfulaSeq       = 12
)

// nfgenmsg is the 4-byte header of every nfnetlink message.
func nfgenmsg(group uint16) []byte {
	b := []byte{0 /* AF_UNSPEC */, 0 /* NFNETLINK_V0 */, 0, 0}
	binary.BigEndian.PutUint16(b[2:], group)
	return b
}

// configMsg is an NFULNL_MSG_CONFIG for group with attrs.
func configMsg(group uint16, attrs func(ae *netlink.AttributeEncoder)) (netlink.Message, error) {
	ae := netlink.NewAttributeEncoder()
	attrs(ae)
	b, err := ae.Encode()
	if err != nil {
		return netlink.Message{}, err
	}
	return netlink.Message{
		Header: netlink.Header{Type: netlink.HeaderType(nfulnlMsgConfig), Flags: netlink.Request | netlink.Acknowledge},
		Data:   append(nfgenmsg(group), b...),
	}, nil
}

// bindMsg binds (or unbinds) the socket to group.
func bindMsg(group uint16, bind bool) (netlink.Message, error) {
	cmd := uint8(cfgCmdUnbind)
	if bind {
		cmd = cfgCmdBind
	}
	return configMsg(group, func(ae *netlink.AttributeEncoder) { ae.Uint8(nfulaCfgCmd, cmd) })
}

// Batching, the NFLOG side of flows.c's WAKEUP_BYTES: the group gathers
// up to nflogBatch messages in one netlink datagram of up to
// nflogBufBytes, flushed at the latest after nflogFlush, so the consumer
// makes a receive per batch instead of per event.
const (
	nflogBatch    = 128
	nflogBufBytes = 64 << 10
	nflogFlush    = 2 // hundredths of a second
)

// modeMsg asks for copies of the first snaplen bytes, sequence numbers,
// and batched delivery.
func modeMsg(group uint16, snaplen uint32) (netlink.Message, error) {
	be32 := func(v uint32) []byte { return binary.BigEndian.AppendUint32(nil, v) }
	return configMsg(group, func(ae *netlink.AttributeEncoder) {
		mode := make([]byte, 6) // struct nfulnl_msg_config_mode, packed
		binary.BigEndian.PutUint32(mode, snaplen)
		mode[4] = copyPacket
		ae.Bytes(nfulaCfgMode, mode)
		ae.Bytes(nfulaCfgNlbufsz, be32(nflogBufBytes))
		ae.Bytes(nfulaCfgTimeout, be32(nflogFlush))
		ae.Bytes(nfulaCfgQthresh, be32(nflogBatch))
		ae.Bytes(nfulaCfgFlags, binary.BigEndian.AppendUint16(nil, cfgFlagSeq))
	})
}

// packet is one NFLOG packet message, decoded.
type packet struct {
	Event
	seq    uint32
	hasSeq bool
}

// errNotPacket marks messages that are not NFULNL_MSG_PACKET.
var errNotPacket = errors.New("not an NFLOG packet message")

// parsePacket decodes an NFULNL_MSG_PACKET: the 5-tuple and TCP flags from
// the copied IPv4 header, the interfaces, the sequence number, and the
// kernel's timestamp when the packet had one (else now).
func parsePacket(m netlink.Message, now time.Time) (packet, error) {
	if m.Header.Type != netlink.HeaderType(nfulnlMsgPacket) {
		return packet{}, errNotPacket
	}
	if len(m.Data) < 4 {
		return packet{}, fmt.Errorf("flows: NFLOG message of %d bytes", len(m.Data))
	}
	ad, err := netlink.NewAttributeDecoder(m.Data[4:])
	if err != nil {
		return packet{}, fmt.Errorf("flows: NFLOG attributes: %w", err)
	}
	ad.ByteOrder = binary.BigEndian
	p := packet{Event: Event{Time: now, Dir: Forward, Verdict: Forwarded}}
	var payload []byte
	var outdev uint32
	for ad.Next() {
		switch ad.Type() {
		case nfulaTimestamp:
			if b := ad.Bytes(); len(b) == 16 {
				sec, usec := binary.BigEndian.Uint64(b), binary.BigEndian.Uint64(b[8:])
				p.Time = time.Unix(int64(sec), int64(usec)*1000)
			}
		case nfulaIfIndev:
			p.Ifindex = ad.Uint32()
		case nfulaIfOutdev:
			outdev = ad.Uint32()
		case nfulaPayload:
			payload = ad.Bytes()
		case nfulaSeq:
			p.seq, p.hasSeq = ad.Uint32(), true
		}
	}
	if err := ad.Err(); err != nil {
		return packet{}, fmt.Errorf("flows: NFLOG attributes: %w", err)
	}
	if p.Ifindex == 0 {
		p.Ifindex = outdev
	}
	if err := p.parseIPv4(payload); err != nil {
		return packet{}, err
	}
	return p, nil
}

// parseIPv4 fills the 5-tuple and TCP flags from an IPv4 packet's start.
func (p *packet) parseIPv4(b []byte) error {
	if len(b) < 20 || b[0]>>4 != 4 {
		return fmt.Errorf("flows: NFLOG payload of %d bytes is not IPv4", len(b))
	}
	ihl := int(b[0]&0x0f) * 4
	p.Proto = b[9]
	src, dst := netip.AddrFrom4([4]byte(b[12:16])), netip.AddrFrom4([4]byte(b[16:20]))
	p.Src, p.Dst = netip.AddrPortFrom(src, 0), netip.AddrPortFrom(dst, 0)
	if binary.BigEndian.Uint16(b[6:])&0x1fff != 0 || (p.Proto != 6 && p.Proto != 17) {
		return nil // later fragment or no ports
	}
	l4 := b[min(ihl, len(b)):]
	if len(l4) < 4 {
		return fmt.Errorf("flows: NFLOG payload of %d bytes ends before the ports", len(b))
	}
	p.Src = netip.AddrPortFrom(src, binary.BigEndian.Uint16(l4))
	p.Dst = netip.AddrPortFrom(dst, binary.BigEndian.Uint16(l4[2:]))
	if p.Proto == 6 && len(l4) >= 14 {
		p.TCPFlags = l4[13]
	}
	return nil
}
