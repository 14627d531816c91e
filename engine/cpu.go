package engine

import (
	"time"

	"golang.org/x/sys/unix"
)

// cpuTimes is the process's CPU use so far, user and system separately.
type cpuTimes struct{ user, sys time.Duration }

// processCPU reads getrusage(RUSAGE_SELF). In a process that also runs a
// Server this includes the server's threads.
func processCPU() cpuTimes {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return cpuTimes{}
	}
	return cpuTimes{
		user: time.Duration(ru.Utime.Nano()),
		sys:  time.Duration(ru.Stime.Nano()),
	}
}
