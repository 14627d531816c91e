package dnsload

import (
	"os"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// poller is the epoll set of one event loop, with an eventfd to wake it:
// a copy of engine/httpload's (same measurements, same reasons), whose
// sockets are registered level-triggered for input only. Events carry the
// caller's index in Fd; Fd == -1 is the wake-up.
//
// Waiting: short waits (open-loop sends, server delays) are a blocking
// epoll_pwait2 with a nanosecond timeout, which holds the goroutine's P
// (Go only takes it back when sysmon notices, up to 10 ms later). Longer
// or unbounded waits block there for briefWait first, then park in Go's
// netpoller on the epoll descriptor itself, so that other goroutines
// (Run's timers, a server in the same process, an agent's control API)
// keep running; Go's netpoller rounds timeouts up to milliseconds, so
// those wake shortWait/2 early and finish with a short wait.
//
// Measured (by httpload) on its server under wrk -c64 keep-alive, pinned
// to one CPU: parking at once costs 11.7 µs of CPU per request (sysmon
// retakes the P), blocking 200 µs first 10.9 µs.
type poller struct {
	epfd   int
	evfd   int
	events []unix.EpollEvent
	pwait2 bool

	ef    *os.File        // epfd, registered with Go's netpoller
	rc    syscall.RawConn // ef's, to park until epfd has events
	ready func(uintptr) bool
	n     int // events found by ready
}

// shortWait is the longest wait done in a blocking epoll_pwait2; briefWait
// is how long a longer wait blocks there before parking in the netpoller.
const (
	shortWait = 2 * time.Millisecond
	briefWait = 200 * time.Microsecond
)

func (p *poller) init() error {
	p.epfd, p.evfd, p.pwait2 = -1, -1, true
	p.events = make([]unix.EpollEvent, 256)
	var err error
	if p.epfd, err = unix.EpollCreate1(unix.EPOLL_CLOEXEC); err != nil {
		return err
	}
	fail := func(err error) error { p.close(); return err }
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

// add registers fd for level-triggered input events (and errors).
func (p *poller) add(fd int, idx int32) error {
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: idx}
	return unix.EpollCtl(p.epfd, unix.EPOLL_CTL_ADD, fd, &ev)
}

// wake interrupts wait, from any goroutine.
func (p *poller) wake() {
	one := [8]byte{1}
	unix.Write(p.evfd, one[:])
}

func (p *poller) drainWake() {
	var b [8]byte
	unix.Read(p.evfd, b[:])
}

func (p *poller) close() {
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

// wait returns the number of events ready within ns nanoseconds (0 on
// timeout); ns < 0 waits without a timeout.
func (p *poller) wait(ns int64) int {
	if ns >= 0 && ns <= int64(shortWait) {
		return p.pwait(ns)
	}
	// Under load the next event is usually microseconds away: wait for it
	// in the syscall before paying for a park.
	if n := p.pwait(int64(briefWait)); n > 0 {
		return n
	}
	if ns > 0 {
		ns -= int64(briefWait)
	}
	var dl time.Time
	if ns > 0 {
		dl = time.Now().Add(time.Duration(ns) - shortWait/2)
	}
	p.ef.SetReadDeadline(dl)
	p.n = 0
	p.rc.Read(p.ready) // error: deadline or closed, then p.n == 0
	return p.n
}

// readyFn is the netpoller callback: collect ready events without blocking.
func (p *poller) readyFn(fd uintptr) bool {
	n, err := unix.EpollWait(int(fd), p.events, 0)
	p.n = max(n, 0)
	return n > 0 || err != nil
}

// pwait is epoll_pwait2 with a nanosecond timeout (open-loop sends must not
// be rounded to milliseconds), or epoll_wait rounded up on kernels before
// 5.11.
func (p *poller) pwait(ns int64) int {
	if p.pwait2 {
		ts := unix.NsecToTimespec(ns)
		n, _, e := unix.Syscall6(unix.SYS_EPOLL_PWAIT2, uintptr(p.epfd),
			uintptr(unsafe.Pointer(&p.events[0])), uintptr(len(p.events)),
			uintptr(unsafe.Pointer(&ts)), 0, 0)
		switch e {
		case 0:
			return int(n)
		case unix.ENOSYS:
			p.pwait2 = false
		default:
			return 0 // EINTR
		}
	}
	n, _ := unix.EpollWait(p.epfd, p.events, int((ns+999999)/1e6))
	return max(n, 0)
}
