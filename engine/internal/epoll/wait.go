package epoll

import (
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Wait returns the number of events ready within ns nanoseconds (0 on
// timeout), in Events; ns < 0 waits without a timeout. See the package
// comment for how it waits.
func (p *Poller) Wait(ns int64) int {
	if ns >= 0 && ns <= int64(ShortWait) {
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
		dl = time.Now().Add(time.Duration(ns) - ShortWait/2)
	}
	p.ef.SetReadDeadline(dl)
	p.n = 0
	p.rc.Read(p.ready) // error: deadline or closed, then p.n == 0
	return p.n
}

// readyFn is the netpoller callback: collect ready events without blocking.
func (p *Poller) readyFn(fd uintptr) bool {
	n, err := unix.EpollWait(int(fd), p.Events, 0)
	p.n = max(n, 0)
	return n > 0 || err != nil
}

// pwait is epoll_pwait2 with a nanosecond timeout (open-loop sends must not
// be rounded to milliseconds), or epoll_wait rounded up on kernels before
// 5.11.
func (p *Poller) pwait(ns int64) int {
	if p.pwait2 {
		ts := unix.NsecToTimespec(ns)
		n, _, e := unix.Syscall6(unix.SYS_EPOLL_PWAIT2, uintptr(p.epfd),
			uintptr(unsafe.Pointer(&p.Events[0])), uintptr(len(p.Events)),
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
	n, _ := unix.EpollWait(p.epfd, p.Events, int((ns+999999)/1e6))
	return max(n, 0)
}
