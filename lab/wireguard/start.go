package wireguard

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cnibench/cnibench/internal/kfeature"
	"github.com/cnibench/cnibench/internal/logtail"
	"github.com/cnibench/cnibench/internal/netnsx"
)

// readyTimeout bounds a daemon's start: a TUN device and a socket.
const readyTimeout = 5 * time.Second

// Start runs c's daemon in the namespace nsPath, in cgroup (if not ""),
// in a session of its own so it outlives the command that built the lab
// (`lab down` kills it with the namespace's processes). Its config, log
// and ready file go in dir, named after the node. It returns once the
// device is up, or with the daemon's last words.
func Start(ctx context.Context, nsPath, cgroup, dir string, c NodeConfig) (pid int, err error) {
	exe, err := os.Executable()
	if err != nil {
		return 0, fmt.Errorf("wireguard: %w", err)
	}
	base := filepath.Join(dir, "wg-"+c.Node)
	c.Ready = base + ".ready"
	os.Remove(c.Ready)
	if err := c.write(base + ".json"); err != nil {
		return 0, fmt.Errorf("wireguard: %w", err)
	}
	logf, err := os.Create(base + ".log")
	if err != nil {
		return 0, fmt.Errorf("wireguard: %w", err)
	}
	defer logf.Close()
	cmd := exec.Command(exe)
	cmd.Env = []string{daemonEnv + "=" + base + ".json", "PATH=/usr/sbin:/usr/bin:/sbin:/bin"}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := closeOnExecInherited(); err != nil {
		return 0, fmt.Errorf("wireguard: %w", err)
	}
	if err := netnsx.StartIn(nsPath, cgroup, nil, cmd); err != nil {
		return 0, fmt.Errorf("wireguard: start the %s daemon: %w", c.Node, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.After(readyTimeout)
	for {
		if _, err := os.Stat(c.Ready); err == nil {
			return cmd.Process.Pid, nil
		}
		select {
		case err := <-exited:
			return 0, fmt.Errorf("wireguard: the %s daemon exited at start (%v): %s", c.Node, err, logtail.Lines(base+".log", 3))
		case <-ctx.Done():
			_ = cmd.Process.Kill()
			return 0, ctx.Err()
		case <-deadline:
			_ = cmd.Process.Kill()
			return 0, fmt.Errorf("wireguard: the %s daemon was not up after %s: %s", c.Node, readyTimeout, logtail.Lines(base+".log", 3))
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// closeOnExecInherited marks every descriptor above stderr close-on-exec.
// Go opens its own so; those this process inherited (a caller's lock
// file, a shell's pipe) are not, and a daemon that outlives the command
// would hold them open for good: a `flock` around `lab up` would never
// be released.
func closeOnExecInherited() error {
	err := unix.CloseRange(3, math.MaxUint32, unix.CLOSE_RANGE_CLOEXEC)
	if err == nil {
		return nil
	}
	// Before Linux 5.11: one by one.
	ents, rerr := os.ReadDir("/proc/self/fd")
	if rerr != nil {
		return errors.Join(err, rerr)
	}
	for _, e := range ents {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd > 2 {
			unix.CloseOnExec(fd)
		}
	}
	return nil
}

// KernelSupport is nil when this kernel has WireGuard devices: the
// module loaded, or built in. It only reads (/sys/module, the kernel's
// modules.builtin): creating a test device would make the kernel load an
// installed module, a change to the host that cnibench never makes. A
// kernel without them gets a kfeature.Unsupported saying which case.
func KernelSupport() error {
	return kernelModule("WireGuard devices", "wireguard", "drivers/net/wireguard")
}

// KernelESP is KernelSupport for IPsec's ESP (XFRM, module esp4), the
// other encryption CNIs offer (Cilium's IPsec mode).
func KernelESP() error { return kernelModule("IPsec ESP (XFRM)", "esp4", "net/ipv4") }

// kernelModule looks module up without loading it: loaded, built in, or
// installed but not loaded.
func kernelModule(feature, module, dir string) error {
	if _, err := os.Stat(filepath.Join("/sys/module", module)); err == nil {
		return nil
	}
	var uts unix.Utsname
	if err := unix.Uname(&uts); err != nil {
		return err
	}
	mods := filepath.Join("/lib/modules", unix.ByteSliceToString(uts.Release[:]))
	if b, err := os.ReadFile(filepath.Join(mods, "modules.builtin")); err == nil && strings.Contains(string(b), "/"+module+".ko") {
		return nil
	}
	detail := "no " + module + " module loaded or built in, and none installed"
	if found, _ := filepath.Glob(filepath.Join(mods, "kernel", dir, module+".ko*")); len(found) > 0 {
		detail = "the " + module + " module is installed but not loaded, and cnibench loads none"
	}
	return &kfeature.Unsupported{Feature: feature, Detail: detail, Err: errors.ErrUnsupported}
}
