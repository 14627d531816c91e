package ambient

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cnibench/cnibench/internal/netnsx"
)

// capture reads the frames of one device of a namespace (AF_PACKET), to
// see what crossed the link between nodes: which TCP segments towards one
// address and port carried TLS records, and whether a marker ever went
// by in clear.
type capture struct {
	fd     int
	ifidx  int
	dst    netip.AddrPort // the segments looked at: towards this
	marker []byte
	wg     sync.WaitGroup
	mu     sync.Mutex
	seen   captured
	stop   bool
}

// captured is what a capture saw.
type captured struct {
	Segments int // TCP segments with payload towards dst
	TLS      int // of those, starting with a TLS handshake record (0x16 0x03)
	Clear    int // frames, to any address, with the marker in clear
}

// startCapture opens an AF_PACKET socket in the namespace at ns, bound to
// device dev, and reads until stopped.
func startCapture(ns, dev string, dst netip.AddrPort, marker []byte) (*capture, error) {
	c := &capture{fd: -1, dst: dst, marker: marker}
	err := netnsx.Do(ns, func() error {
		ifi, err := net.InterfaceByName(dev)
		if err != nil {
			return err
		}
		c.ifidx = ifi.Index
		fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, int(htons(unix.ETH_P_ALL)))
		if err != nil {
			return err
		}
		c.fd = fd
		return unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: ifi.Index})
	})
	if err != nil {
		if c.fd >= 0 {
			unix.Close(c.fd)
		}
		return nil, fmt.Errorf("ambient: capture on %s: %w", dev, err)
	}
	tv := unix.NsecToTimeval((50 * time.Millisecond).Nanoseconds())
	unix.SetsockoptTimeval(c.fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
	c.wg.Add(1)
	go c.read()
	return c, nil
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// read takes frames until stopped and drained, keeping what look tells
// of each.
func (c *capture) read() {
	defer c.wg.Done()
	buf := make([]byte, 65536)
	for {
		n, from, err := unix.Recvfrom(c.fd, buf, 0)
		if err != nil { // a timeout: nothing queued, so stopping loses nothing
			c.mu.Lock()
			stop := c.stop
			c.mu.Unlock()
			if stop {
				return
			}
			continue
		}
		if ll, ok := from.(*unix.SockaddrLinklayer); ok && ll.Ifindex != c.ifidx {
			continue // queued before bind
		}
		c.mu.Lock()
		c.look(buf[:n])
		c.mu.Unlock()
	}
}

// look counts one Ethernet frame.
func (c *capture) look(frame []byte) {
	if bytes.Contains(frame, c.marker) {
		c.seen.Clear++
	}
	payload, dst, ok := tcpPayload(frame)
	if !ok || dst != c.dst || len(payload) == 0 {
		return
	}
	c.seen.Segments++
	if len(payload) >= 2 && payload[0] == 0x16 && payload[1] == 0x03 {
		c.seen.TLS++
	}
}

// tcpPayload is an Ethernet/IPv4/TCP frame's payload and destination.
func tcpPayload(f []byte) ([]byte, netip.AddrPort, bool) {
	if len(f) < 14+20 || binary.BigEndian.Uint16(f[12:14]) != unix.ETH_P_IP {
		return nil, netip.AddrPort{}, false
	}
	ip := f[14:]
	ihl := int(ip[0]&0x0f) * 4
	total := int(binary.BigEndian.Uint16(ip[2:4]))
	if ip[0]>>4 != 4 || ip[9] != unix.IPPROTO_TCP || ihl < 20 || total > len(ip) || total < ihl+20 {
		return nil, netip.AddrPort{}, false
	}
	tcp := ip[ihl:total]
	off := int(tcp[12]>>4) * 4
	if off < 20 || off > len(tcp) {
		return nil, netip.AddrPort{}, false
	}
	dst := netip.AddrPortFrom(netip.AddrFrom4([4]byte(ip[16:20])), binary.BigEndian.Uint16(tcp[2:4]))
	return tcp[off:], dst, true
}

// done stops reading and returns what was seen.
func (c *capture) done() captured {
	c.mu.Lock()
	c.stop = true
	c.mu.Unlock()
	c.wg.Wait()
	unix.Close(c.fd)
	return c.seen
}
