package lab

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/cnibench/cnibench/internal/netnsx"
)

// cgroup2Mount returns the mount point of the cgroup v2 hierarchy from
// /proc/self/mountinfo ("/sys/fs/cgroup" on a pure v2 system,
// "/sys/fs/cgroup/unified" in hybrid mode), or "" if there is none.
func cgroup2Mount() string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	best, rootSeen := "", false
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		// id parent maj:min root mountpoint opts [optional...] - fstype source superopts
		line := sc.Text()
		i := strings.Index(line, " - ")
		if i < 0 {
			continue
		}
		post := strings.Fields(line[i+3:])
		pre := strings.Fields(line[:i])
		if len(post) < 1 || post[0] != "cgroup2" || len(pre) < 5 {
			continue
		}
		mp := unescapeMountinfo(pre[4])
		// Prefer a mount of the hierarchy's root; else the first one.
		if pre[3] == "/" && !rootSeen {
			best, rootSeen = mp, true
		} else if best == "" {
			best = mp
		}
	}
	if best == "" {
		return ""
	}
	if _, err := os.Stat(filepath.Join(best, "cgroup.procs")); err != nil {
		return ""
	}
	return best
}

func unescapeMountinfo(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// cgroupRootFor returns the cgroup directory of lab name ("" without cgroup v2).
func cgroupRootFor(name string) string {
	m := cgroup2Mount()
	if m == "" {
		return ""
	}
	return filepath.Join(m, "cnb-"+name)
}

// cgroupDirs returns root and every cgroup below it, deepest first.
func cgroupDirs(root string) []string {
	var dirs []string
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	sort.Slice(dirs, func(i, j int) bool {
		di, dj := strings.Count(dirs[i], "/"), strings.Count(dirs[j], "/")
		if di != dj {
			return di > dj
		}
		return dirs[i] < dirs[j]
	})
	return dirs
}

// cgroupProcs returns the pids in one cgroup (not its descendants).
func cgroupProcs(dir string) []int {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return nil
	}
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		if p, err := strconv.Atoi(f); err == nil {
			pids = append(pids, p)
		}
	}
	return pids
}

// cgroupPopulated reports whether any process is in root or below it.
func cgroupPopulated(root string) bool {
	b, err := os.ReadFile(filepath.Join(root, "cgroup.events"))
	if err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if l == "populated 0" {
				return false
			}
			if l == "populated 1" {
				return true
			}
		}
	}
	for _, d := range cgroupDirs(root) {
		if len(cgroupProcs(d)) > 0 {
			return true
		}
	}
	return false
}

// killCgroup kills every process in root and its descendants, using
// cgroup.kill when the kernel has it (5.14+) and SIGKILL per pid otherwise,
// and waits up to timeout for them to exit. It returns descriptions of the
// processes it signalled.
func killCgroup(root string, timeout time.Duration) ([]string, error) {
	if _, err := os.Stat(root); err != nil {
		return nil, nil
	}
	var killed []string
	self := os.Getpid()
	for _, d := range cgroupDirs(root) {
		for _, pid := range cgroupProcs(d) {
			if pid != self {
				killed = append(killed, fmt.Sprintf("process %d (%s) in cgroup %s", pid, netnsx.Comm(pid), filepath.Base(d)))
			}
		}
	}
	if len(killed) == 0 {
		return nil, nil
	}
	useKill := true
	if err := os.WriteFile(filepath.Join(root, "cgroup.kill"), []byte("1"), 0); err != nil {
		useKill = false
	}
	deadline := time.Now().Add(timeout)
	for {
		if !useKill {
			for _, d := range cgroupDirs(root) {
				for _, pid := range cgroupProcs(d) {
					if pid != self {
						syscall.Kill(pid, syscall.SIGKILL)
					}
				}
			}
		}
		if !cgroupPopulated(root) {
			return killed, nil
		}
		if time.Now().After(deadline) {
			return killed, fmt.Errorf("processes still in cgroup %s after %v", root, timeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// removeCgroups removes root and its descendants deepest first, retrying
// briefly while exiting processes leave. It returns the removed dirs.
func removeCgroups(root string, timeout time.Duration) ([]string, error) {
	deadline := time.Now().Add(timeout)
	var removed []string
	for {
		dirs := cgroupDirs(root)
		if len(dirs) == 0 {
			return removed, nil
		}
		var lastErr error
		for _, d := range dirs {
			err := syscall.Rmdir(d)
			switch {
			case err == nil:
				removed = append(removed, d)
			case errors.Is(err, syscall.ENOENT):
			default:
				lastErr = fmt.Errorf("remove cgroup %s: %w", d, err)
			}
		}
		if lastErr == nil {
			return removed, nil
		}
		if time.Now().After(deadline) {
			return removed, lastErr
		}
		time.Sleep(20 * time.Millisecond)
	}
}
