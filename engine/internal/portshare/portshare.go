// Package portshare keeps the connections of different placements apart in
// the client's ephemeral port range.
//
// The suite measures several placements from the same client pod to the same
// server pod: pod-to-pod straight to the pod's IP, pod-to-service through a
// ClusterIP that is NATed to that same IP and port. The server closes first
// (TIME_WAIT lands there, as with netserver), so the client reuses its ports
// at once. A connection of one placement then often meets the server's
// TIME_WAIT socket of the other placement's connection on the same four
// tuple; the client's TCP timestamps, whose offset depends on the
// destination address it dialled (ClusterIP or pod IP), look older, PAWS
// rejects the SYN (TcpExtPAWSTimewait), and the client retransmits it a
// second later. Measured in the lab with the iptables datapath, TCP_CRR on
// pod-to-service and pod-to-pod interleaved fell from 3,370 to 626 conn/s
// in three rounds, with 1 s stalls, while each placement alone held steady.
// Giving each placement its own share of the range (IP_LOCAL_PORT_RANGE,
// Linux 6.3) means one placement's leftovers never meet another's
// connections; within one placement the destination, and so the timestamp
// offset, is the same and the kernel reuses TIME_WAIT four-tuples normally.
package portshare

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// RangeFile is the namespace's ephemeral port range, read by the thread's
// own network namespace.
const RangeFile = "/proc/sys/net/ipv4/ip_local_port_range"

// ErrUnsupported: the kernel has no IP_LOCAL_PORT_RANGE (before Linux 6.3).
var ErrUnsupported = errors.New("IP_LOCAL_PORT_RANGE unsupported by this kernel (Linux 6.3 or later)")

// Range is a span of local ports, both ends included.
type Range struct{ Lo, Hi int }

func (r Range) String() string { return fmt.Sprintf("%d-%d", r.Lo, r.Hi) }

// Of returns share index of count of the namespace's ephemeral range.
func Of(index, count int) (Range, error) {
	b, err := os.ReadFile(RangeFile)
	if err != nil {
		return Range{}, fmt.Errorf("read ephemeral port range: %w", err)
	}
	full, err := parse(string(b))
	if err != nil {
		return Range{}, err
	}
	return Split(full, index, count)
}

// parse reads ip_local_port_range ("32768\t60999\n").
func parse(s string) (Range, error) {
	f := strings.Fields(s)
	if len(f) != 2 {
		return Range{}, fmt.Errorf("ephemeral port range %q: want two numbers", strings.TrimSpace(s))
	}
	lo, err1 := strconv.Atoi(f[0])
	hi, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil || lo < 1 || hi > 65535 || lo > hi {
		return Range{}, fmt.Errorf("ephemeral port range %q: want two ports, low first", strings.TrimSpace(s))
	}
	return Range{lo, hi}, nil
}

// Split returns share index of count equal shares of full.
func Split(full Range, index, count int) (Range, error) {
	n := full.Hi - full.Lo + 1
	if count < 1 || index < 0 || index >= count {
		return Range{}, fmt.Errorf("port share %d of %d: want 0 <= index < count", index, count)
	}
	if n/count < 2 {
		return Range{}, fmt.Errorf("port share %d of %d: the ephemeral range %s is too small to share", index, count, full)
	}
	return Range{Lo: full.Lo + index*n/count, Hi: full.Lo + (index+1)*n/count - 1}, nil
}

// Apply restricts the ports connect() picks for fd to r. It must be called
// before connect (or bind).
func Apply(fd int, r Range) error {
	v := uint32(r.Lo) | uint32(r.Hi)<<16
	err := unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_LOCAL_PORT_RANGE, int(v))
	if errors.Is(err, unix.ENOPROTOOPT) {
		return ErrUnsupported
	}
	if err != nil {
		return fmt.Errorf("set local port range %s: %w", r, err)
	}
	return nil
}

// Take works out share index of count for a client about to connect on
// sockets of family, and checks this kernel can hold a socket to it. With
// no IP_LOCAL_PORT_RANGE it returns nil and a note: the client then uses
// the whole range and the result says so.
func Take(family, index, count int) (*Range, string, error) {
	r, err := Of(index, count)
	if err != nil {
		return nil, "", err
	}
	fd, err := unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, "", fmt.Errorf("socket: %w", err)
	}
	defer unix.Close(fd)
	switch err := Apply(fd, r); {
	case errors.Is(err, ErrUnsupported):
		return nil, "ports from the whole ephemeral range: " + err.Error(), nil
	case err != nil:
		return nil, "", err
	}
	return &r, "", nil
}
