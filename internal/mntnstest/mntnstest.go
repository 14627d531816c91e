// Package mntnstest runs a test in a private mount namespace, so the test
// can cover, share and unmount /run/netns as a neighbouring tool would
// without touching the host's mounts.
package mntnstest

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// envKey names the test the re-executed binary is to run privately.
const envKey = "CNB_PRIVATE_MNTNS_TEST"

// Run returns true in a child process of the test binary that runs only
// test t, in a new mount namespace where every mount is private (Go's
// exec marks / MS_REC|MS_PRIVATE after unshare) and /run is a fresh tmpfs,
// so /run/netns starts as a plain directory nobody else sees. The body of
// t runs there. In the parent Run waits for the child, logs its output,
// fails t if the child failed, and returns false. Mounts die with the
// child's mount namespace; network namespaces, processes and cgroups do not,
// so the test must still remove what it makes. t must be a top-level test.
func Run(t *testing.T) bool {
	t.Helper()
	if os.Getenv(envKey) == t.Name() {
		if err := unix.Mount("tmpfs", "/run", "tmpfs", 0, "mode=0755"); err != nil {
			t.Fatalf("private /run: %v", err)
		}
		return true
	}
	if os.Geteuid() != 0 {
		t.Skip("skipping: needs root (a private mount namespace)")
	}
	args := []string{"-test.run", "^" + regexp.QuoteMeta(t.Name()) + "$", "-test.v", "-test.count=1"}
	if f := flagValue("test.timeout"); f != "" {
		args = append(args, "-test.timeout", f)
	}
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), envKey+"="+t.Name())
	cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS}
	out, err := cmd.CombinedOutput()
	t.Logf("in a private mount namespace:\n%s", out)
	if err != nil {
		t.Errorf("%s in a private mount namespace: %v", t.Name(), err)
	} else if !strings.Contains(string(out), "--- PASS: "+t.Name()) {
		t.Errorf("%s did not run in the private mount namespace", t.Name())
	}
	return false
}

// flagValue returns the value of the test binary's flag name as given on
// its command line, or "".
func flagValue(name string) string {
	for i, a := range os.Args {
		for _, p := range []string{"-" + name + "=", "--" + name + "="} {
			if v, ok := strings.CutPrefix(a, p); ok {
				return v
			}
		}
		if (a == "-"+name || a == "--"+name) && i+1 < len(os.Args) {
			return os.Args[i+1]
		}
	}
	return ""
}
