package flows

import (
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// threadCPUClock is the clock id of thread tid's CPU time, as glibc's
// pthread_getcpuclockid builds it (MAKE_THREAD_CPUCLOCK(tid,
// CPUCLOCK_SCHED)): readable from any thread of the process, with the
// scheduler's nanosecond accounting, where /proc/<pid>/task/<tid>/stat
// has 10 ms ticks, too coarse for a consumer using milliseconds per sample.
func threadCPUClock(tid int) int32 {
	return int32(^uint32(tid)<<3 | 6)
}

// threadCPU is the CPU time thread tid of this process has used.
func threadCPU(tid int) (time.Duration, error) {
	var ts unix.Timespec
	if err := unix.ClockGettime(threadCPUClock(tid), &ts); err != nil {
		return 0, fmt.Errorf("flows: CPU clock of thread %d: %w", tid, err)
	}
	return time.Duration(ts.Nano()), nil
}

// ownThreadCPU is the calling thread's CPU time.
func ownThreadCPU() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0 // Linux always has it
	}
	return time.Duration(ts.Nano())
}
