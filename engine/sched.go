package engine

import (
	"runtime"
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
