package nodecpu

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// CgroupSeconds is the CPU charged to a cgroup v2 dir and its
// descendants, from cpu.stat's usage_usec.
func CgroupSeconds(dir string) (float64, error) {
	b, err := os.ReadFile(filepath.Join(dir, "cpu.stat"))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "usage_usec "); ok {
			us, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return us / 1e6, err
		}
	}
	return 0, errors.New(dir + "/cpu.stat has no usage_usec")
}

// cpuList is cpus as results write them: "0,1".
func cpuList(cpus []int) string {
	s := make([]string, len(cpus))
	for i, c := range cpus {
		s[i] = strconv.Itoa(c)
	}
	return strings.Join(s, ",")
}

// baseName is a cgroup dir's last element, as results name it.
func baseName(dir string) string { return filepath.Base(dir) }
