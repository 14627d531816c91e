package haproxy

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/cnibench/cnibench/internal/netnsx"
)

// clockTick is USER_HZ, the unit of /proc/<pid>/stat times: 100 on every
// Linux architecture Go supports.
const clockTick = 10 * time.Millisecond

// OwnPids are the processes whose command line contains cfgPrefix (a
// config path prefix under a lab's state dir), found by scanning /proc:
// what a crashed run left running, also without its state file.
func OwnPids(cfgPrefix string) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline"); err == nil && strings.Contains(string(b), cfgPrefix) {
			out = append(out, pid)
		}
	}
	return out
}

// KillOwn kills pid if its command line still names cfg (a pid may be
// reused), SIGTERM then SIGKILL after 3 s, and waits for it to go. An
// exiting process's command line reads empty before it is a zombie, so
// an empty one counts as ours until the process is gone.
func KillOwn(pid int, cfg string) error {
	alive := func() bool {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		return err == nil && (strings.Contains(string(b), cfg) || len(b) == 0 && netnsx.Alive(pid))
	}
	if !alive() {
		return nil
	}
	syscall.Kill(pid, syscall.SIGTERM)
	for i := 0; i < 300 && alive(); i++ {
		if i == 150 {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if alive() {
		return fmt.Errorf("haproxy: pid %d (%s) survived SIGKILL", pid, cfg)
	}
	return nil
}

// RemoveCgroup removes an emptied cgroup v2 dir, retrying for 1 s while
// the kernel still counts the reaped process (EBUSY).
func RemoveCgroup(dir string) error {
	for i := 0; ; i++ {
		err := os.Remove(dir)
		if err == nil || errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if !errors.Is(err, syscall.EBUSY) || i == 50 {
			return fmt.Errorf("haproxy: %w", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// removeAll removes the cgroups, then every file matching glob and the
// state file (a run's configs, logs and certificates).
func removeAll(glob, state string, cgroups []string) error {
	var errs []error
	for _, cg := range cgroups {
		if cg != "" {
			errs = append(errs, RemoveCgroup(cg))
		}
	}
	files, _ := filepath.Glob(glob)
	for _, f := range append(files, state) {
		if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("haproxy: %w", err))
		}
	}
	return errors.Join(errs...)
}

// CgroupCPU reads usage_usec from dir's cpu.stat (present without the cpu
// controller enabled).
func CgroupCPU(dir string) (time.Duration, error) {
	b, err := os.ReadFile(filepath.Join(dir, "cpu.stat"))
	if err != nil {
		return 0, fmt.Errorf("haproxy: %w", err)
	}
	return parseCPUStat(string(b))
}

func parseCPUStat(s string) (time.Duration, error) {
	for _, l := range strings.Split(s, "\n") {
		if v, ok := strings.CutPrefix(l, "usage_usec "); ok {
			us, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("haproxy: cpu.stat usage_usec %q: %w", v, err)
			}
			return time.Duration(us) * time.Microsecond, nil
		}
	}
	return 0, fmt.Errorf("haproxy: cpu.stat has no usage_usec")
}

// ProcessCPU is utime+stime of a live process (a proxy without a cgroup
// of its own).
func ProcessCPU(pid int) (time.Duration, error) {
	b, err := readProc(pid, "stat")
	if err != nil {
		return 0, err
	}
	return parseProcStat(b)
}

// readProc reads /proc/<pid>/<file> of a live proxy.
func readProc(pid int, file string) (string, error) {
	if pid == 0 {
		return "", fmt.Errorf("haproxy: proxy not running (and no cgroup to read)")
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/%s", pid, file))
	if err != nil {
		return "", fmt.Errorf("haproxy: %w", err)
	}
	return string(b), nil
}

// parseProcStat takes utime (field 14) and stime (15) of /proc/<pid>/stat,
// counting fields after the ")" that ends the command name.
func parseProcStat(s string) (time.Duration, error) {
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("haproxy: bad /proc stat line %.40q", s)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("haproxy: short /proc stat line %.40q", s)
	}
	u, err1 := strconv.ParseUint(f[11], 10, 64)
	st, err2 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("haproxy: bad utime/stime %q %q", f[11], f[12])
	}
	return time.Duration(u+st) * clockTick, nil
}
