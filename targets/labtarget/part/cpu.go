package part

import (
	"context"
	"errors"
	"strconv"
	"strings"

	"github.com/cnibench/cnibench/suite/nodecpu"
)

// CgroupCPUSeconds is the CPU time a cgroup v2 dir's processes used
// (usage_usec of cpu.stat, there without the cpu controller).
func CgroupCPUSeconds(dir string) (float64, error) {
	if dir == "" {
		return 0, errors.New("cgroup v2 unavailable: no CPU accounting")
	}
	return nodecpu.CgroupSeconds(dir)
}

// CPUList is cpus as the results write them: "0,1", or "unpinned".
func CPUList(cpus []int) string {
	if len(cpus) == 0 {
		return "unpinned"
	}
	var s []string
	for _, c := range cpus {
		s = append(s, strconv.Itoa(c))
	}
	return strings.Join(s, ",")
}

// FailedOr ends a progress line cut short: "interrupted" after a signal
// (ctx cancelled), else "failed".
func FailedOr(ctx context.Context) string {
	if ctx.Err() != nil {
		return "interrupted"
	}
	return "failed"
}
