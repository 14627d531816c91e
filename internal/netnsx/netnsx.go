// Package netnsx runs code and starts processes inside Linux network
// namespaces without ever changing the namespace of a thread that goes
// back to the Go runtime's pool.
//
// Every function that switches namespace does so on a fresh goroutine locked
// to its OS thread and returns from that goroutine while still locked, so the
// runtime destroys the thread instead of reusing it. The calling goroutine's
// thread and every other thread of the process stay where they are.
package netnsx

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// RunDir is where named network namespaces are bind-mounted (as iproute2 does).
const RunDir = "/run/netns"

// Path returns the bind-mount path of the named network namespace.
func Path(name string) string { return filepath.Join(RunDir, name) }

// ID identifies a namespace (or any file) by device and inode.
type ID struct {
	Dev uint64
	Ino uint64
}

// IDOf stats path (following symlinks such as /proc/<pid>/ns/net) and
// returns its device and inode.
func IDOf(path string) (ID, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return ID{}, err
	}
	return ID{Dev: uint64(st.Dev), Ino: st.Ino}, nil
}

// CheckNotHost refuses an empty path and the host's network namespace
// (that of PID 1 or of this process): what a datapath or enforcer must not
// program, since it would change the machine's own traffic.
func CheckNotHost(p string) error {
	if p == "" {
		return errors.New("no network namespace given")
	}
	id, err := IDOf(p)
	if err != nil {
		return fmt.Errorf("network namespace %s: %w", p, err)
	}
	for _, host := range []string{"/proc/1/ns/net", "/proc/self/ns/net"} {
		if h, err := IDOf(host); err == nil && h == id {
			return fmt.Errorf("refusing to program the host's network namespace (%s)", p)
		}
	}
	return nil
}

// onMainThread reports whether the calling thread is the process's main
// thread; a variable so tests can exercise the main-thread path.
var onMainThread = func() bool { return unix.Gettid() == unix.Getpid() }

// onFreshThread runs fn on a goroutine locked to an OS thread that is not the
// process's main thread. If fn returns discard=true the goroutine exits while
// still locked, so the Go runtime terminates the thread; otherwise the thread
// is unlocked and reused.
func onFreshThread(fn func() (discard bool, err error)) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if onMainThread() {
			// We landed on the main thread (m0). The runtime cannot terminate
			// it (it would only wedge it, keeping any namespace it is in
			// alive). Keep m0 occupied by this goroutine, which is locked to
			// it, so the nested goroutine is necessarily scheduled on another
			// thread; m0 itself is never modified.
			errc <- onFreshThread(fn)
			runtime.UnlockOSThread()
			return
		}
		discard, err := fn()
		errc <- err
		if !discard {
			runtime.UnlockOSThread()
		}
		// Returning while locked: the runtime kills this thread.
	}()
	return <-errc
}

// enter switches the calling (locked, disposable) thread into the network
// namespace at nsPath and verifies it arrived there.
func enter(nsPath string) error {
	fd, err := unix.Open(nsPath, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open netns %s: %w", nsPath, err)
	}
	defer unix.Close(fd)
	var want unix.Stat_t
	if err := unix.Fstat(fd, &want); err != nil {
		return fmt.Errorf("stat netns %s: %w", nsPath, err)
	}
	if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
		return fmt.Errorf("setns %s: %w", nsPath, err)
	}
	got, err := IDOf("/proc/thread-self/ns/net")
	if err != nil {
		return fmt.Errorf("verify netns %s: %w", nsPath, err)
	}
	if got.Ino != want.Ino || got.Dev != uint64(want.Dev) {
		return fmt.Errorf("setns %s: thread is not in the namespace afterwards", nsPath)
	}
	return nil
}

// Do runs fn on a locked OS thread inside the network namespace at nsPath
// (e.g. /run/netns/cnb-x-node0). Sockets created by fn belong to that
// namespace and may be used from any goroutine afterwards. The thread is
// discarded when fn returns. fn must not start goroutines that expect to be
// in the namespace (they run on other threads).
func Do(nsPath string, fn func() error) error {
	return onFreshThread(func() (bool, error) {
		if err := enter(nsPath); err != nil {
			// setns may have partially happened; never reuse the thread.
			return true, err
		}
		return true, fn()
	})
}

// StartIn starts cmd so that the child process is in the network namespace
// nsPath, in the cgroup v2 directory cgroupDir (if not empty, via clone3
// CLONE_INTO_CGROUP) and pinned to cpus (if not empty). Only the child is
// affected: the fork happens on a disposable thread that enters the
// namespace and sets its own affinity before forking.
//
// cmd.SysProcAttr.Pdeathsig is rejected: the "parent" the kernel watches is
// the forking thread, which exits right after Start, so the child would be
// signalled immediately.
func StartIn(nsPath, cgroupDir string, cpus []int, cmd *exec.Cmd) error {
	if cmd == nil {
		return errors.New("netnsx: nil cmd")
	}
	if cmd.SysProcAttr != nil && cmd.SysProcAttr.Pdeathsig != 0 {
		return errors.New("netnsx: SysProcAttr.Pdeathsig is not supported (the forking thread exits right after Start)")
	}
	var set unix.CPUSet
	if len(cpus) > 0 {
		set.Zero()
		for _, c := range cpus {
			if c < 0 || c >= 1024 {
				return fmt.Errorf("netnsx: invalid cpu %d", c)
			}
			set.Set(c)
		}
	}
	if cgroupDir != "" {
		cfd, err := unix.Open(cgroupDir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("open cgroup %s: %w", cgroupDir, err)
		}
		defer unix.Close(cfd)
		if cmd.SysProcAttr == nil {
			cmd.SysProcAttr = &syscall.SysProcAttr{}
		}
		cmd.SysProcAttr.UseCgroupFD = true
		cmd.SysProcAttr.CgroupFD = cfd
	}
	return Do(nsPath, func() error {
		if len(cpus) > 0 {
			if err := unix.SchedSetaffinity(0, &set); err != nil {
				return fmt.Errorf("set cpu affinity %v: %w", cpus, err)
			}
		}
		return cmd.Start()
	})
}

// CreateNamed creates a new network namespace for each name and bind-mounts
// it at /run/netns/<name>, like `ip netns add` (including making /run/netns
// a shared mount first, see shareRunDir). It fails if a name already
// exists. Created namespaces are reported through created even on error so
// the caller can remove them, and written to the EnvJournal file.
func CreateNamed(names []string, created func(name string)) error {
	if err := shareRunDir(); err != nil {
		return err
	}
	return onFreshThread(func() (bool, error) {
		// Each NewNamed unshares the calling thread into a new namespace, so
		// the thread ends up in a lab namespace: always discard it.
		for _, n := range names {
			h, err := netns.NewNamed(n)
			if err != nil {
				if !errors.Is(err, os.ErrExist) {
					// The file may exist without a mount; let the caller clean it.
					if _, serr := os.Stat(Path(n)); serr == nil {
						journal(n)
						created(n)
					}
				}
				return true, fmt.Errorf("create netns %s: %w", n, err)
			}
			h.Close()
			journal(n)
			created(n)
		}
		return true, nil
	})
}

// DeleteNamed unmounts and removes /run/netns/<name>. The namespace itself
// disappears once no process or open file refers to it. A missing name is not
// an error; a leftover file that is not a mount point is removed. Every
// mount stacked on the path is unmounted, and mounts hidden under a cover
// of /run/netns too (see detachHidden): either would make remove fail with
// EBUSY.
func DeleteNamed(name string) error {
	p := Path(name)
	for i := 0; ; i++ {
		err := unix.Unmount(p, unix.MNT_DETACH)
		if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOENT) {
			break
		}
		if err != nil {
			return fmt.Errorf("unmount %s: %w", p, err)
		}
		if i == maxStack {
			return fmt.Errorf("unmount %s: more than %d stacked mounts", p, maxStack)
		}
	}
	err := os.Remove(p)
	if errors.Is(err, unix.EBUSY) {
		if herr := detachHidden(name); herr != nil {
			return fmt.Errorf("remove %s: a mount of it is hidden under a mount on %s and cannot be reached (%v): %w", p, RunDir, herr, err)
		}
		err = os.Remove(p)
	}
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// PathsWithNamed is paths (namespace files a state file recorded) with
// every /run/netns/<prefix>* added that is not among them: what a crash
// cleanup sweeps, so it also finds namespaces its state file never named.
func PathsWithNamed(paths []string, prefix string) ([]string, error) {
	named, err := ListNamed(prefix)
	for _, n := range named {
		if p := Path(n); !slices.Contains(paths, p) {
			paths = append(paths, p)
		}
	}
	return paths, err
}

// ListNamed returns the names under /run/netns that start with prefix.
func ListNamed(prefix string) ([]string, error) {
	ents, err := os.ReadDir(RunDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), prefix) {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// NewHandle returns a netlink (NETLINK_ROUTE) handle whose socket lives in
// the namespace at nsPath. The socket is created on a disposable thread
// inside the namespace, so no thread ever has to switch back.
func NewHandle(nsPath string) (*netlink.Handle, error) {
	var h *netlink.Handle
	err := Do(nsPath, func() error {
		var err error
		h, err = netlink.NewHandle(unix.NETLINK_ROUTE)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("netlink handle in %s: %w", nsPath, err)
	}
	return h, nil
}

// SysctlPath maps a sysctl key such as "net.ipv4.ip_forward" to its file
// under /proc/sys. Keys already written with slashes are used as is.
func SysctlPath(key string) string {
	if strings.Contains(key, "/") {
		return filepath.Join("/proc/sys", key)
	}
	return filepath.Join("/proc/sys", strings.ReplaceAll(key, ".", "/"))
}

// ErrNoSysctl is returned when a sysctl key does not exist in the namespace.
var ErrNoSysctl = errors.New("sysctl not present")

// WriteSysctl writes value to key in the network namespace of the calling
// thread. Call it only inside Do. A missing key wraps ErrNoSysctl.
func WriteSysctl(key, value string) error {
	p := SysctlPath(key)
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%s: %w", key, ErrNoSysctl)
	}
	if err != nil {
		return fmt.Errorf("sysctl %s: %w", key, err)
	}
	_, err = f.WriteString(value)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("sysctl %s=%q: %w", key, value, err)
	}
	return nil
}

// ReadSysctl reads key in the network namespace of the calling thread (call
// it inside Do for a lab namespace). Whitespace runs are collapsed to one
// space, so "1024\t65535\n" reads as "1024 65535".
func ReadSysctl(key string) (string, error) {
	b, err := os.ReadFile(SysctlPath(key))
	if errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("%s: %w", key, ErrNoSysctl)
	}
	if err != nil {
		return "", err
	}
	return strings.Join(strings.Fields(string(b)), " "), nil
}

// PidsIn returns the pids (other than this process) whose main thread is in
// one of the given network namespaces, keyed by namespace.
func PidsIn(ids map[ID]string) (map[string][]int, error) {
	out := map[string][]int{}
	if len(ids) == 0 {
		return out, nil
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	self := os.Getpid()
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		id, err := IDOf("/proc/" + e.Name() + "/ns/net")
		if err != nil {
			continue // gone, zombie, or kernel thread
		}
		if name, ok := ids[id]; ok {
			out[name] = append(out[name], pid)
		}
	}
	return out, nil
}

// Comm returns the command name of pid, or "?".
func Comm(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	if err != nil {
		return "?"
	}
	return strings.TrimSpace(string(b))
}

// Alive reports whether pid exists and is not a zombie.
func Alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return false
	}
	st := s[i+2]
	return st != 'Z' && st != 'X'
}

// ThreadsOutside lists this process's threads that are not in the network
// namespace id, waiting up to timeout for discarded threads that are still
// exiting (Do returns before its disposable thread is gone). Tests use it to
// prove that entering a namespace never leaks into the caller.
func ThreadsOutside(id ID, timeout time.Duration) []string {
	var bad []string
	for deadline := time.Now().Add(timeout); ; time.Sleep(10 * time.Millisecond) {
		bad = bad[:0]
		tasks, _ := os.ReadDir("/proc/self/task")
		for _, task := range tasks {
			got, err := IDOf("/proc/self/task/" + task.Name() + "/ns/net")
			if err == nil && got != id {
				bad = append(bad, fmt.Sprintf("thread %s is in netns %v, want %v", task.Name(), got, id))
			}
		}
		if len(bad) == 0 || time.Now().After(deadline) {
			return bad
		}
	}
}
