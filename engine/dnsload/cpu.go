package dnsload

import (
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// cpuTimes is the process's CPU use so far, user and system separately.
type cpuTimes struct{ user, sys time.Duration }

// processCPU reads getrusage(RUSAGE_SELF): every thread of the process,
// including a Server running in it.
func processCPU() cpuTimes {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return cpuTimes{}
	}
	return cpuTimes{user: time.Duration(ru.Utime.Nano()), sys: time.Duration(ru.Stime.Nano())}
}

// usableCPUs is how many CPUs the process can keep busy: the CPUs of its
// affinity mask (sched_getaffinity, what taskset sets), capped at
// GOMAXPROCS (which Go also lowers to a cgroup CPU limit), since Go code
// cannot run on more Ps than that.
func usableCPUs() int {
	n := runtime.NumCPU()
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err == nil && set.Count() > 0 {
		n = set.Count()
	}
	return max(1, min(n, runtime.GOMAXPROCS(0)))
}
