package engine

import (
	"runtime"
	"sync"
	"time"
)

// yieldEvery is how often a syscall-bound flow thread passes through the Go
// scheduler. Measured with Go 1.26: a locked goroutine that only makes
// syscalls never reschedules, so after 10 ms sysmon treats it as a
// long-running goroutine and takes its P away in the middle of a recv. The
// next exit from the syscall then takes the slow path, and sysmon, having
// retaken a P, polls every 20 us for the next millisecond: ~5000 extra
// wakeups a second on the same CPUs as the flow. On loopback that cost
// TCP_RR 15-25% of its rate against a C server. A Gosched every few ms
// (two thread handoffs, ~20 us) resets the clock.
const yieldEvery = 4 * time.Millisecond

// yielder calls runtime.Gosched at most every yieldEvery; tick is meant to
// be called once per message or transaction and reads the clock only
// every 64 calls.
type yielder struct {
	n    uint32
	last time.Time
}

func (y *yielder) tick() {
	y.n++
	if y.n&63 != 0 {
		return
	}
	now := time.Now()
	if now.Sub(y.last) >= yieldEvery {
		y.last = now
		runtime.Gosched()
	}
}

var spareOnce sync.Once

// spareP raises GOMAXPROCS to 2 when it is 1 (a process pinned to one CPU,
// or under a one-CPU cgroup limit), once per process. Engine threads block
// in syscalls; while every P is parked in one, sysmon takes it back within
// 20 us, goes to sleep once all Ps are idle, and the next thread to leave
// its syscall has to wake sysmon again. Measured on a TCP_CRR server pinned
// to one CPU: 5.4 context switches per connection instead of netserver's 1.
// With an idle P to spare, sysmon leaves a P in a syscall alone for 10 ms.
// The extra P runs no more work than there is; it only lets a thread keep
// its P across a blocking call.
func spareP() {
	spareOnce.Do(func() {
		if runtime.GOMAXPROCS(0) < 2 {
			runtime.GOMAXPROCS(2)
		}
	})
}
