// Package epoll is the epoll set of one event loop of the load engines
// (httpload's client and server loops, dnsload's client loops), with an
// eventfd to wake it from other goroutines. The engines register their own
// sockets (each with its own trigger mode and event data) through Ctl;
// the wake-up is the event whose Fd is -1.
//
// Waiting: every wait is one blocking epoll_pwait2 (nanosecond timeout,
// or none), made through Go's syscall entry so that the runtime hands the
// loop's P to other goroutines (Run's timers, a server in the same
// process, an agent's control API) when the wait lasts. Wake interrupts
// it (the eventfd is in the set).
//
// Measured on httpload's server, one CPU, wrk -c64 with a new connection
// per request (bench/http.sh): the earlier wait, 200 µs in epoll_pwait2
// and then a park in Go's netpoller on the epoll descriptor, cost 20.8 µs
// of server CPU per request against nginx's 16.4 (SetReadDeadline, the
// park, the netpoller's own epoll_pwait and a second epoll_wait on every
// idle gap); blocking in epoll_pwait2 alone costs 15-16 µs. Under
// keep-alive the two were equal within the noise (4.6-5.5 µs).
package epoll

import (
	"golang.org/x/sys/unix"
)

// Poller is one loop's epoll set; the zero value is unusable until Init.
// Only the loop's goroutine uses it, except Wake.
type Poller struct {
	// Events holds what the last Wait returned, in Events[:n].
	Events []unix.EpollEvent

	epfd   int
	evfd   int
	pwait2 bool // false: the kernel has no epoll_pwait2 (before 5.11)
}

// Init creates the epoll set and its wake-up eventfd.
func (p *Poller) Init() error {
	p.epfd, p.evfd, p.pwait2 = -1, -1, true
	p.Events = make([]unix.EpollEvent, 256)
	var err error
	if p.epfd, err = unix.EpollCreate1(unix.EPOLL_CLOEXEC); err != nil {
		return err
	}
	fail := func(err error) error { p.Close(); return err }
	if p.evfd, err = unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC); err != nil {
		return fail(err)
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: -1}
	if err := unix.EpollCtl(p.epfd, unix.EPOLL_CTL_ADD, p.evfd, &ev); err != nil {
		return fail(err)
	}
	return nil
}

// Ctl is epoll_ctl on the set: op is EPOLL_CTL_ADD, _MOD or _DEL. ev.Fd
// must not be -1 (the wake-up).
func (p *Poller) Ctl(op, fd int, ev *unix.EpollEvent) error {
	return unix.EpollCtl(p.epfd, op, fd, ev)
}

// Wake interrupts Wait, from any goroutine.
func (p *Poller) Wake() {
	one := [8]byte{1}
	unix.Write(p.evfd, one[:])
}

// DrainWake consumes the wake-up, once Wait returned its event.
func (p *Poller) DrainWake() {
	var b [8]byte
	unix.Read(p.evfd, b[:])
}

// Close releases the descriptors (idempotent).
func (p *Poller) Close() {
	for _, fd := range []*int{&p.epfd, &p.evfd} {
		if *fd >= 0 {
			unix.Close(*fd)
			*fd = -1
		}
	}
}
