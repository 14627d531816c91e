package haproxy

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Memory is what the proxy holds now, in bytes: its cgroup's
// memory.current where the memory controller is on for it (page cache and
// kernel memory charged to it included, as a pod's usage is), else the
// resident set of the live process (VmRSS). Read at a sample's end, as
// a cluster's working set is.
func (p *Proc) Memory() (uint64, error) {
	if p.Cgroup != "" {
		if v, err := CgroupMemory(p.Cgroup); err == nil || !errors.Is(err, os.ErrNotExist) {
			return v, err
		}
	}
	return ProcessRSS(p.PID)
}

// CgroupMemory reads dir's memory.current (absent without the memory
// controller in the parent's subtree_control: os.ErrNotExist).
func CgroupMemory(dir string) (uint64, error) {
	b, err := os.ReadFile(filepath.Join(dir, "memory.current"))
	if err != nil {
		return 0, fmt.Errorf("haproxy: %w", err)
	}
	v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("haproxy: memory.current %q: %w", b, err)
	}
	return v, nil
}

// ProcessRSS reads VmRSS of /proc/<pid>/status.
func ProcessRSS(pid int) (uint64, error) {
	b, err := readProc(pid, "status")
	if err != nil {
		return 0, err
	}
	return parseVmRSS(b)
}

// parseVmRSS takes "VmRSS:  1234 kB" of a /proc/<pid>/status text.
func parseVmRSS(s string) (uint64, error) {
	for _, l := range strings.Split(s, "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			f := strings.Fields(v)
			if len(f) != 2 || f[1] != "kB" {
				return 0, fmt.Errorf("haproxy: VmRSS line %q", l)
			}
			kb, err := strconv.ParseUint(f[0], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("haproxy: VmRSS %q: %w", f[0], err)
			}
			return kb << 10, nil
		}
	}
	return 0, errors.New("haproxy: /proc status has no VmRSS (a kernel thread?)")
}
