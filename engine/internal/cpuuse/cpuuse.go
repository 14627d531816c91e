// Package cpuuse measures the CPU a load generator uses, so that its
// results can say whether the client, not the system under test, was the
// bottleneck.
package cpuuse

import (
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// Times is the process's CPU use so far, user and system separately.
type Times struct{ User, Sys time.Duration }

// Process reads getrusage(RUSAGE_SELF): every thread of the process,
// including a server running in it.
func Process() Times {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return Times{}
	}
	return Times{User: time.Duration(ru.Utime.Nano()), Sys: time.Duration(ru.Stime.Nano())}
}

// Usable is how many CPUs the process can keep busy: the CPUs of its
// affinity mask (sched_getaffinity, what taskset sets), capped at
// GOMAXPROCS (which Go also lowers to a cgroup CPU limit), since Go code
// cannot run on more Ps than that.
func Usable() int {
	n := runtime.NumCPU()
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err == nil && set.Count() > 0 {
		n = set.Count()
	}
	return max(1, min(n, runtime.GOMAXPROCS(0)))
}
