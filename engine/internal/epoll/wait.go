package epoll

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// Wait returns the number of events ready within ns nanoseconds (0 on
// timeout or on a signal), in Events; ns < 0 waits without a timeout. See
// the package comment for how it waits.
func (p *Poller) Wait(ns int64) int {
	if p.pwait2 {
		var tp uintptr // nil: no timeout
		ts := unix.NsecToTimespec(max(ns, 0))
		if ns >= 0 {
			tp = uintptr(unsafe.Pointer(&ts))
		}
		// Open-loop sends must not be rounded to milliseconds, hence
		// epoll_pwait2's nanoseconds.
		n, _, e := unix.Syscall6(unix.SYS_EPOLL_PWAIT2, uintptr(p.epfd),
			uintptr(unsafe.Pointer(&p.Events[0])), uintptr(len(p.Events)), tp, 0, 0)
		switch e {
		case 0:
			return int(n)
		case unix.ENOSYS:
			p.pwait2 = false
		default:
			return 0 // EINTR
		}
	}
	ms := -1
	if ns >= 0 {
		ms = int((ns + 999999) / 1e6) // rounded up
	}
	n, _ := unix.EpollWait(p.epfd, p.Events, ms)
	return max(n, 0)
}

// RawWait is Wait without telling the Go scheduler, for a loop that owns
// its thread and waits only briefly between bursts of work: the P stays
// with it, so no other thread is woken to take it over. ms bounds the wait
// (and so how long the P is held); it must be small.
func (p *Poller) RawWait(ms int) int {
	n, _, e := unix.RawSyscall6(unix.SYS_EPOLL_PWAIT, uintptr(p.epfd),
		uintptr(unsafe.Pointer(&p.Events[0])), uintptr(len(p.Events)), uintptr(ms), 0, 0)
	if e != 0 {
		return 0
	}
	return int(n)
}
