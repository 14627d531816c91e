package engine

import (
	"errors"
	"io"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Raw socket helpers. Engines use fds from unix.Socket that are never handed
// to Go's netpoller, so a blocking recv() really puts the thread to sleep in
// the kernel and costs one wakeup per message, as in netperf and iperf3. The
// helpers call recvfrom/sendto directly so the hot loops do not allocate.

var (
	errTimeout = errors.New("receive timeout")
	errStopped = errors.New("stopped")
)

// zero backs empty buffers passed to the kernel.
var zero uintptr

func bufPtr(p []byte) unsafe.Pointer {
	if len(p) == 0 {
		return unsafe.Pointer(&zero)
	}
	return unsafe.Pointer(&p[0])
}

// recvFlags is recv(2) with flags; n == 0 with no error means EOF.
func recvFlags(fd int, p []byte, flags int) (int, error) {
	n, _, e := unix.Syscall6(unix.SYS_RECVFROM, uintptr(fd), uintptr(bufPtr(p)), uintptr(len(p)), uintptr(flags), 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

// sendFlags is send(2) with flags (unix.Sendto does not return the count).
func sendFlags(fd int, p []byte, flags int) (int, error) {
	n, _, e := unix.Syscall6(unix.SYS_SENDTO, uintptr(fd), uintptr(bufPtr(p)), uintptr(len(p)), uintptr(flags|unix.MSG_NOSIGNAL), 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

// peer is a reusable raw source address, so servers can answer datagrams
// without allocating a unix.Sockaddr per packet.
type peer struct {
	sa  unix.RawSockaddrAny
	len uint32
}

func recvFrom(fd int, p []byte, from *peer) (int, error) {
	from.len = unix.SizeofSockaddrAny
	n, _, e := unix.Syscall6(unix.SYS_RECVFROM, uintptr(fd), uintptr(bufPtr(p)), uintptr(len(p)), 0,
		uintptr(unsafe.Pointer(&from.sa)), uintptr(unsafe.Pointer(&from.len)))
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

func sendTo(fd int, p []byte, to *peer) (int, error) {
	n, _, e := unix.Syscall6(unix.SYS_SENDTO, uintptr(fd), uintptr(bufPtr(p)), uintptr(len(p)), unix.MSG_NOSIGNAL,
		uintptr(unsafe.Pointer(&to.sa)), uintptr(to.len))
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

func schedYield() { _, _, _ = unix.Syscall(unix.SYS_SCHED_YIELD, 0, 0, 0) }

// waiter says how a flow waits on its socket: a plain blocking call
// (Blocking), or MSG_DONTWAIT retried in a loop (BusyPoll). A spinning waiter
// checks stop and yields the CPU every few hundred empty polls, so a dead
// peer or an oversubscribed host cannot wedge it.
type waiter struct {
	spin bool
	stop *atomic.Bool
	// timeout bounds a spinning recv (a blocking one uses SO_RCVTIMEO);
	// 0 spins until stop.
	timeout time.Duration
}

func (w waiter) flags() int {
	if w.spin {
		return unix.MSG_DONTWAIT
	}
	return 0
}

// again handles EAGAIN: a blocking socket only returns it when SO_RCVTIMEO or
// SO_SNDTIMEO expired; a spinning one after an empty poll.
func (w waiter) again(spins *int, since *time.Time) error {
	if !w.spin {
		return errTimeout
	}
	*spins++
	if *spins&255 == 0 {
		if w.stop != nil && w.stop.Load() {
			return errStopped
		}
		if w.timeout > 0 {
			now := time.Now()
			if since.IsZero() {
				*since = now
			} else if now.Sub(*since) > w.timeout {
				return errTimeout
			}
		}
		schedYield()
	}
	return nil
}

// recv reads at least one byte (or one datagram); EOF is io.EOF.
func (w waiter) recv(fd int, p []byte) (int, error) {
	spins, since := 0, time.Time{}
	for {
		n, err := recvFlags(fd, p, w.flags())
		switch {
		case err == nil && n == 0 && len(p) > 0:
			return 0, io.EOF
		case err == nil:
			return n, nil
		case err == unix.EINTR:
		case err == unix.EAGAIN:
			if e := w.again(&spins, &since); e != nil {
				return 0, e
			}
		default:
			return 0, err
		}
	}
}

func (w waiter) readFull(fd int, p []byte) error {
	for len(p) > 0 {
		n, err := w.recv(fd, p)
		if err != nil {
			return err
		}
		p = p[n:]
	}
	return nil
}

// send writes one datagram, or all of p on a stream socket.
func (w waiter) send(fd int, p []byte) error {
	spins, since := 0, time.Time{}
	for len(p) > 0 {
		n, err := sendFlags(fd, p, w.flags())
		switch {
		case err == nil:
			p = p[n:]
		case err == unix.EINTR:
		case err == unix.EAGAIN:
			if e := w.again(&spins, &since); e != nil {
				return e
			}
		default:
			return err
		}
	}
	return nil
}

var blocking = waiter{}

// readN consumes n bytes from a stream using buf as scratch space.
func readN(fd int, buf []byte, n int) error {
	for n > 0 {
		m := min(n, len(buf))
		if err := blocking.readFull(fd, buf[:m]); err != nil {
			return err
		}
		n -= m
	}
	return nil
}

// writeN writes n bytes (buf's contents, repeated) to a stream.
func writeN(fd int, buf []byte, n int) error {
	for n > 0 {
		m := min(n, len(buf))
		if err := blocking.send(fd, buf[:m]); err != nil {
			return err
		}
		n -= m
	}
	return nil
}
