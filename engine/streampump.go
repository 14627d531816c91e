package engine

import (
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TCP_STREAM writes every stream's messages from one goroutine, each
// socket in turn, as iperf3's one thread does with select(): one message
// (or what the socket takes of it) per socket per pass, and poll() only
// when every socket is full.
//
// Why: with a goroutine per stream on one CPU, the netpoller wakes a
// stream whose socket drained only when the running one blocks, so each
// stream filled its whole send buffer in turn (2–4 MB not yet sent per
// socket, measured with ss, where iperf3's stay empty) and 4 streams
// reached 0.67× iperf3 -P 4 on the same path at 1.42× its CPU per MB;
// with the pump (and the server reading without SO_RCVLOWAT) 0.87× at
// 1.16× (BENCHMARKS.md, 2026-12-03).

// pumpTurn is a stream's part in the pump: the last stream to arrive
// (every one has sent its hello, or failed to: fd -1, left out) runs it
// for all; the others wait for it.
func (rc *runCtx) pumpTurn(f *flow, fd int, msg []byte) error {
	f.fd = fd
	if !rc.pumpArrive() {
		<-rc.pumped
		return nil
	}
	defer close(rc.pumped)
	return rc.pump(msg)
}

// pumpArrive counts a stream in; true for the last.
func (rc *runCtx) pumpArrive() bool { return int(rc.pumpIn.Add(1)) == len(rc.flows) }

// pumpPollMax bounds a poll(): the end of the run is seen, and the P the
// raw poll holds is back before the scheduler would preempt the pump.
const pumpPollMax = 10 * time.Millisecond

// pump writes msg to every stream until the measured interval ends (or
// the run stops), counting the messages completed inside it per stream.
func (rc *runCtx) pump(msg []byte) error {
	off := make([]int, len(rc.flows))
	pfds := make([]unix.PollFd, len(rc.flows))
	for i := range rc.flows {
		pfds[i] = unix.PollFd{Fd: int32(rc.flows[i].fd), Events: unix.POLLOUT}
	}
	for !rc.stop.Load() {
		wrote := false
		for i := range rc.flows {
			f := &rc.flows[i]
			if f.fd < 0 {
				continue
			}
			n, err := rawWrite(f.fd, msg[off[i]:])
			switch {
			case err == unix.EAGAIN || err == unix.EINTR:
				continue
			case err != nil:
				return rc.failed(f, "send to", err)
			}
			wrote = true
			if off[i] += n; off[i] < len(msg) {
				continue
			}
			off[i] = 0
			if end := time.Now(); !end.Before(rc.measStart) && !end.After(rc.measEnd) {
				f.bytesSent += int64(len(msg))
			}
		}
		wait := time.Until(rc.measEnd)
		if wait < 0 {
			return nil
		}
		if !wrote {
			if err := rawPoll(pfds, int(min(wait, pumpPollMax).Milliseconds())+1); err != nil && err != unix.EINTR {
				return rc.failed(&rc.flows[0], "poll", err)
			}
		}
	}
	return nil
}

// rawWrite is write(2) without telling the Go scheduler: the socket is
// non-blocking, so the call never sleeps, and a scheduler told of each
// 40 µs write wakes its monitor thread every 20 µs to take the P back,
// on the same CPU as the pump (measured: 2.3 context switches per MB
// against iperf3's 0.1).
func rawWrite(fd int, p []byte) (int, error) { return rawIO(unix.SYS_WRITE, fd, p) }

// rawRead is read(2) on a non-blocking socket, raw for the same reason.
func rawRead(fd int, p []byte) (int, error) { return rawIO(unix.SYS_READ, fd, p) }

// rawIO is read(2) or write(2) (trap) as a raw system call.
func rawIO(trap uintptr, fd int, p []byte) (int, error) {
	n, _, e := unix.RawSyscall(trap, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

// rawPoll is poll(2) without telling the Go scheduler, as rawWrite: told of
// a poll that sleeps, the scheduler takes the P back and its monitor then
// wakes every 20 µs for a millisecond, on the pump's CPU (1.2 context
// switches per MB with one stream, against iperf3's 0.3).
// ppoll(2), which every Linux architecture has (arm64 has no poll).
func rawPoll(fds []unix.PollFd, ms int) error {
	ts := unix.NsecToTimespec(int64(ms) * 1e6)
	_, _, e := unix.RawSyscall6(unix.SYS_PPOLL, uintptr(unsafe.Pointer(&fds[0])), uintptr(len(fds)),
		uintptr(unsafe.Pointer(&ts)), 0, 0, 0)
	if e != 0 {
		return e
	}
	return nil
}
