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
// TCP_RR 15-25% of its rate against a C server. A Gosched (two thread
// handoffs, ~20 us, three context switches) before the 10 ms are up resets
// the clock; 8 ms leaves sysmon's tick room and keeps the Goscheds rare.
const yieldEvery = 8 * time.Millisecond

// yielder calls runtime.Gosched about every yieldEvery; tick is meant to be
// called once per message or transaction. It reads the clock every 8 calls,
// or every call with perCall (a ~30 ns vDSO read is nothing against a TCP
// connection, but 8 calls of a slow CRR flow can outlast 10 ms).
type yielder struct {
	perCall bool
	n       uint32
	last    time.Time
}

func (y *yielder) tick() {
	y.n++
	if !y.perCall && y.n&7 != 0 {
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
