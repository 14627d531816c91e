// Package epoll is the epoll set of one event loop of the load engines
// (httpload's client and server loops, dnsload's client loops), with an
// eventfd to wake it from other goroutines. The engines register their own
// sockets (each with its own trigger mode and event data) through Ctl;
// the wake-up is the event whose Fd is -1.
//
// Waiting: short waits (open-loop sends, server delays) are a blocking
// epoll_pwait2 with a nanosecond timeout, which holds the goroutine's P
// (Go only takes it back when sysmon notices, up to 10 ms later). Longer
// or unbounded waits block there for briefWait first, then park in Go's
// netpoller on the epoll descriptor itself, so that other goroutines
// (Run's timers, a server in the same process, an agent's control API)
// keep running; Go's netpoller rounds timeouts up to milliseconds, so
// those wake ShortWait/2 early and finish with a short wait.
//
// Measured on httpload's server under wrk -c64 keep-alive, pinned to one
// CPU: parking at once costs 11.7 µs of CPU per request (sysmon retakes
// the P, ~8000 context switches a second more than nginx), blocking 200 µs
// first 10.9 µs; nginx 12.0-12.6 µs.
package epoll

import (
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Poller is one loop's epoll set; the zero value is unusable until Init.
// Only the loop's goroutine uses it, except Wake.
type Poller struct {
	// Events holds what the last Wait returned, in Events[:n].
	Events []unix.EpollEvent

	epfd   int
	evfd   int
	pwait2 bool

	ef    *os.File        // epfd, registered with Go's netpoller
	rc    syscall.RawConn // ef's, to park until epfd has events
	ready func(uintptr) bool
	n     int // events found by ready
}

// ShortWait is the longest wait done in a blocking epoll_pwait2; briefWait
// is how long a longer wait blocks there before parking in the netpoller.
const (
	ShortWait = 2 * time.Millisecond
	briefWait = 200 * time.Microsecond
)

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
	// Non-blocking, so that os.NewFile hands it to the netpoller (epoll_wait
	// itself ignores the flag).
	if err := unix.SetNonblock(p.epfd, true); err != nil {
		return fail(err)
	}
	p.ef = os.NewFile(uintptr(p.epfd), "epoll")
	if p.rc, err = p.ef.SyscallConn(); err != nil {
		return fail(err)
	}
	p.ready = p.readyFn
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
	if p.ef != nil {
		p.ef.Close() // closes epfd
		p.ef, p.epfd = nil, -1
	}
	for _, fd := range []*int{&p.epfd, &p.evfd} {
		if *fd >= 0 {
			unix.Close(*fd)
			*fd = -1
		}
	}
}
