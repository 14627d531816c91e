// Package procstat reads /proc/stat's CPU lines: the machine's time per
// state, in total and per CPU. The lab's nodes share this machine's
// kernel, so the CPUs a run pins its agents to show what the kernel did
// for them: softirq that no cgroup is charged for when it runs in the idle
// task's or ksoftirqd's context, and the whole busy time of those CPUs.
package procstat

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// clockTick is USER_HZ, the unit of /proc/stat: 100 on every
// architecture Linux exports it for (sysconf(_SC_CLK_TCK) needs cgo).
const clockTick = 0.01

// Times is the time one CPU (or all) spent in each state, in seconds.
// Guest time is already inside User and Nice, so it is not kept.
type Times struct {
	User, Nice, System, Idle, IOWait, IRQ, SoftIRQ, Steal float64
}

// Busy is the time spent running anything: tasks, the kernel, interrupts.
func (t Times) Busy() float64 {
	return t.User + t.Nice + t.System + t.IRQ + t.SoftIRQ
}

// Total is every state but steal (time the hypervisor gave elsewhere).
func (t Times) Total() float64 { return t.Busy() + t.Idle + t.IOWait }

// Sub is t − u, state by state.
func (t Times) Sub(u Times) Times {
	return Times{t.User - u.User, t.Nice - u.Nice, t.System - u.System, t.Idle - u.Idle,
		t.IOWait - u.IOWait, t.IRQ - u.IRQ, t.SoftIRQ - u.SoftIRQ, t.Steal - u.Steal}
}

// Add is t + u, state by state.
func (t Times) Add(u Times) Times {
	return Times{t.User + u.User, t.Nice + u.Nice, t.System + u.System, t.Idle + u.Idle,
		t.IOWait + u.IOWait, t.IRQ + u.IRQ, t.SoftIRQ + u.SoftIRQ, t.Steal + u.Steal}
}

// Stat is one reading: the aggregate line and each CPU's.
type Stat struct {
	All    Times
	PerCPU map[int]Times
}

// Read reads /proc/stat.
func Read() (Stat, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return Stat{}, err
	}
	return Parse(string(b))
}

// Parse reads the cpu lines of a /proc/stat text; other lines are skipped.
func Parse(text string) (Stat, error) {
	s := Stat{PerCPU: map[int]Times{}}
	seen := false
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || !strings.HasPrefix(f[0], "cpu") {
			continue
		}
		t, err := parseTimes(f[1:])
		if err != nil {
			return Stat{}, fmt.Errorf("/proc/stat: %s: %w", f[0], err)
		}
		if f[0] == "cpu" {
			s.All, seen = t, true
			continue
		}
		n, err := strconv.Atoi(f[0][3:])
		if err != nil {
			return Stat{}, fmt.Errorf("/proc/stat: bad CPU %q", f[0])
		}
		s.PerCPU[n] = t
	}
	if !seen {
		return Stat{}, fmt.Errorf("/proc/stat: no aggregate cpu line")
	}
	return s, nil
}

// parseTimes reads user nice system idle iowait irq softirq steal (the
// fields every kernel since 2.6.11 has; guest fields are ignored).
func parseTimes(f []string) (Times, error) {
	if len(f) < 8 {
		return Times{}, fmt.Errorf("%d fields, want at least 8", len(f))
	}
	var v [8]float64
	for i := range v {
		n, err := strconv.ParseUint(f[i], 10, 64)
		if err != nil {
			return Times{}, fmt.Errorf("field %d: %w", i+1, err)
		}
		v[i] = float64(n) * clockTick
	}
	return Times{v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]}, nil
}

// Sum is the times of cpus added up; every CPU when cpus is empty. A CPU
// the reading lacks (offline) adds nothing.
func (s Stat) Sum(cpus []int) Times {
	if len(cpus) == 0 {
		return s.All
	}
	var t Times
	for _, c := range cpus {
		t = t.Add(s.PerCPU[c])
	}
	return t
}
