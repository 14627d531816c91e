package labtarget

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// lockFileName is the lab's run lock beside its state.
const lockFileName = "run.lock"

// lock takes the lab's run lock (flock, released by the kernel if this
// process dies) and writes this process's pid and command line into the
// lock file, so that a second run can say who holds the lab.
func (t *Target) lock() error {
	path := filepath.Join(t.cfg.Lab.StateDir, t.cfg.Lab.Name, lockFileName)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return fmt.Errorf("lab run lock: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if !errors.Is(err, unix.EWOULDBLOCK) {
			return fmt.Errorf("lab run lock %s: %w", path, err)
		}
		return fmt.Errorf("lab %q is busy with another run (%s): wait for it or use another --lab", t.cfg.Lab.Name, lockHolder(path))
	}
	// What an earlier holder wrote is stale now: replace it.
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(describePID(os.Getpid())+"\n"), 0)
	}
	t.lockFile = f
	return nil
}

func (t *Target) unlock() {
	if t.lockFile != nil {
		_ = unix.Flock(int(t.lockFile.Fd()), unix.LOCK_UN)
		_ = t.lockFile.Close()
		t.lockFile = nil
	}
}

// lockHolder names the process holding the lock on path: the kernel's
// record (/proc/locks) first, since the file may still hold an earlier
// holder's line for the instant between a new holder's flock and its
// write; the file's line when the kernel's cannot be matched (another pid
// namespace, a filesystem reporting other device numbers).
func lockHolder(path string) string {
	pid := flockHolder(path)
	if pid == 0 {
		b, _ := os.ReadFile(path)
		if f := strings.Fields(string(b)); len(f) >= 2 && f[0] == "pid" {
			pid, _ = strconv.Atoi(strings.TrimSuffix(f[1], ":"))
		}
	}
	if pid <= 0 {
		return "holder unknown: " + path + " names no live process"
	}
	if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err != nil {
		return "holder unknown: " + path + " names no live process"
	}
	return describePID(pid)
}

// describePID is "pid N: command line" (the command line cut at 200 bytes).
func describePID(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	cmd := strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " "))
	if err != nil || cmd == "" {
		cmd = "command line unknown"
	}
	if len(cmd) > 200 {
		cmd = cmd[:200] + "…"
	}
	return fmt.Sprintf("pid %d: %s", pid, cmd)
}

// flockHolder is the pid /proc/locks gives for a FLOCK on path's inode
// (lines like "1: FLOCK  ADVISORY  WRITE 1234 00:1a:5678 0 EOF", device
// numbers in hex), 0 when none is found.
func flockHolder(path string) int {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return 0
	}
	want := fmt.Sprintf("%02x:%02x:%d", unix.Major(st.Dev), unix.Minor(st.Dev), st.Ino)
	f, err := os.Open("/proc/locks")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 6 && fields[1] == "FLOCK" && fields[5] == want {
			if pid, err := strconv.Atoi(fields[4]); err == nil {
				return pid
			}
		}
	}
	return 0
}
