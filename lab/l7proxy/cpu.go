package l7proxy

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// clockTick is USER_HZ, the unit of /proc/<pid>/stat times: 100 on every
// Linux architecture Go supports.
const clockTick = 10 * time.Millisecond

// cgroupCPU reads usage_usec from dir's cpu.stat (present without the cpu
// controller enabled).
func cgroupCPU(dir string) (time.Duration, error) {
	b, err := os.ReadFile(filepath.Join(dir, "cpu.stat"))
	if err != nil {
		return 0, fmt.Errorf("l7proxy: %w", err)
	}
	return parseCPUStat(string(b))
}

func parseCPUStat(s string) (time.Duration, error) {
	for _, l := range strings.Split(s, "\n") {
		if v, ok := strings.CutPrefix(l, "usage_usec "); ok {
			us, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("l7proxy: cpu.stat usage_usec %q: %w", v, err)
			}
			return time.Duration(us) * time.Microsecond, nil
		}
	}
	return 0, fmt.Errorf("l7proxy: cpu.stat has no usage_usec")
}

// procCPU is utime+stime of a live process.
func procCPU(pid int) (time.Duration, error) {
	if pid == 0 {
		return 0, fmt.Errorf("l7proxy: proxy not running (and no cgroup to read)")
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("l7proxy: %w", err)
	}
	return parseProcStat(string(b))
}

// parseProcStat takes utime (field 14) and stime (15) of /proc/<pid>/stat,
// counting fields after the ")" that ends the command name.
func parseProcStat(s string) (time.Duration, error) {
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("l7proxy: bad /proc stat line %.40q", s)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("l7proxy: short /proc stat line %.40q", s)
	}
	u, err1 := strconv.ParseUint(f[11], 10, 64)
	st, err2 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("l7proxy: bad utime/stime %q %q", f[11], f[12])
	}
	return time.Duration(u+st) * clockTick, nil
}
