package engine

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// resolve returns the first address of host.
func resolve(ctx context.Context, host string) (net.IP, error) {
	if ip := net.ParseIP(host); ip != nil {
		return ip, nil
	}
	addrs, err := net.DefaultResolver.LookupIPAddr(ctx, host)
	if err != nil {
		return nil, err
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("no address for %s", host)
	}
	return addrs[0].IP, nil
}

// sockaddr builds a fresh unix.Sockaddr; each flow needs its own because
// unix.Connect writes into it.
func sockaddr(ip net.IP, port int) (family int, sa unix.Sockaddr) {
	if ip4 := ip.To4(); ip4 != nil {
		s := &unix.SockaddrInet4{Port: port}
		copy(s.Addr[:], ip4)
		return unix.AF_INET, s
	}
	s := &unix.SockaddrInet6{Port: port}
	copy(s.Addr[:], ip.To16())
	return unix.AF_INET6, s
}

func newSocket(family, sotype int, nonblock bool) (int, error) {
	t := sotype | unix.SOCK_CLOEXEC
	if nonblock {
		t |= unix.SOCK_NONBLOCK
	}
	for {
		fd, err := unix.Socket(family, t, 0)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

// waitConnected waits for an in-progress connect on fd to finish, polling so
// that stop and the deadline are noticed; a zero deadline means none.
// slice = 0 spins (BusyPoll).
func waitConnected(fd int, stop *atomic.Bool, deadline time.Time, slice time.Duration) error {
	pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLOUT}}
	ms := int(slice / time.Millisecond)
	for spins := 1; ; spins++ {
		n, err := unix.Poll(pfd, ms)
		if err != nil && err != unix.EINTR {
			return err
		}
		if n > 0 {
			soerr, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ERROR)
			if err != nil {
				return err
			}
			if soerr != 0 {
				return unix.Errno(soerr)
			}
			return nil
		}
		if stop != nil && stop.Load() {
			return errStopped
		}
		if !deadline.IsZero() && time.Now().After(deadline) {
			return unix.ETIMEDOUT
		}
		if ms == 0 && spins&255 == 0 {
			schedYield()
		}
	}
}

// dialTCP opens a connected TCP socket for a long-lived flow (TCP_STREAM,
// TCP_RR), registered in f.fds so that abort wakes it. The connect itself is
// non-blocking with a timeout; the socket is blocking afterwards.
func (rc *runCtx) dialTCP(f *flow) (int, error) {
	family, sa := sockaddr(rc.ip, rc.o.Port)
	fd, err := newSocket(family, unix.SOCK_STREAM, true)
	if err != nil {
		return -1, fmt.Errorf("%s: socket: %w", rc.o.Test, err)
	}
	if !f.fds.add(fd) {
		return -1, errStopped
	}
	err = unix.Connect(fd, sa)
	if err == unix.EINPROGRESS || err == unix.EINTR {
		err = waitConnected(fd, &rc.stop, time.Now().Add(connectTimeout), 100*time.Millisecond)
	}
	if err == nil {
		err = unix.SetNonblock(fd, false)
	}
	if err != nil {
		f.fds.close(fd)
		if errors.Is(err, errStopped) {
			return -1, err
		}
		return -1, fmt.Errorf("%s: connect %s: %w", rc.o.Test, rc.addr, err)
	}
	return fd, nil
}

// dialUDP opens a connected UDP socket (connect only sets the peer).
func (rc *runCtx) dialUDP(f *flow) (int, error) {
	family, sa := sockaddr(rc.ip, rc.o.Port)
	fd, err := newSocket(family, unix.SOCK_DGRAM, false)
	if err != nil {
		return -1, fmt.Errorf("%s: socket: %w", rc.o.Test, err)
	}
	if !f.fds.add(fd) {
		return -1, errStopped
	}
	if err := unix.Connect(fd, sa); err != nil {
		f.fds.close(fd)
		return -1, fmt.Errorf("%s: connect %s: %w", rc.o.Test, rc.addr, err)
	}
	return fd, nil
}

// setRecvTimeout sets SO_RCVTIMEO, after which a blocking recv returns
// EAGAIN.
func setRecvTimeout(fd int, d time.Duration) error {
	tv := unix.NsecToTimeval(int64(d))
	return unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
}
