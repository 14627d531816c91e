package hosttest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"

	"github.com/vishvananda/netlink"
)

// envPrivateNet marks the test binary that RunInPrivateNetwork started in
// its own network namespace.
const envPrivateNet = "CNIBENCH_TEST_PRIVATE_NET"

// RunInPrivateNetwork runs the tests as RunMain does, but in a network
// namespace of their own with only loopback up, when it can make one
// (root, or unprivileged user namespaces). Why: tests that start agents on
// 127.0.0.1 use the engines' fixed ports (5201, 8080, 53, …), and on a
// shared host another program (an iperf3 server, a DNS cache, a second test
// run) may hold them; "address already in use" is then the host's state,
// not a bug. In a private namespace the ports are always free, and the
// tests' traffic cannot leave it. Where no namespace can be made the tests
// run in place and say so.
func RunInPrivateNetwork(m interface{ Run() int }) int {
	if os.Getenv(envChild) != "" || InPrivateNetwork() {
		return RunMain(m) // the noisy neighbour's own process, or the tests in their namespace
	}
	code, err := reexecInNewNetns()
	if err != nil {
		fmt.Fprintf(os.Stderr, "no private network namespace for the tests (%v): they bind 127.0.0.1 on the host's loopback\n", err)
		return RunMain(m)
	}
	return code
}

// reexecInNewNetns runs this test binary again, with the same arguments,
// in a new network namespace (and a new user namespace when not root),
// and returns its exit code. err is set only when the child could not be
// started (no namespace could be made).
func reexecInNewNetns() (int, error) {
	attr := &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET, Pdeathsig: syscall.SIGKILL}
	if os.Geteuid() != 0 {
		attr.Cloneflags |= syscall.CLONE_NEWUSER
		attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: os.Geteuid(), HostID: os.Geteuid(), Size: 1}}
		attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getegid(), HostID: os.Getegid(), Size: 1}}
	}
	cmd := exec.Command("/proc/self/exe", os.Args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), envPrivateNet+"=1")
	cmd.SysProcAttr = attr
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	err := cmd.Wait()
	var exit *exec.ExitError
	if err == nil {
		return 0, nil
	}
	if errors.As(err, &exit) && exit.ExitCode() >= 0 {
		return exit.ExitCode(), nil
	}
	fmt.Fprintf(os.Stderr, "test binary in its private network namespace: %v\n", err)
	return 1, nil
}

// loopbackUp brings lo up in this (new) namespace: it starts down.
// RunMain calls it in the child of RunInPrivateNetwork.
func loopbackUp() error {
	lo, err := netlink.LinkByName("lo")
	if err != nil {
		return fmt.Errorf("find lo: %w", err)
	}
	if err := netlink.LinkSetUp(lo); err != nil {
		return fmt.Errorf("set lo up: %w", err)
	}
	return nil
}

// InPrivateNetwork reports whether this process is the test binary that
// RunInPrivateNetwork started in a namespace of its own.
func InPrivateNetwork() bool { return os.Getenv(envPrivateNet) == "1" }
