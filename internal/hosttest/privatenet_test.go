package hosttest

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// The child runs in a namespace other than its parent's, with lo up, and
// its exit code is the parent's: a failing test still fails the run.
func TestRunInPrivateNetwork(t *testing.T) {
	if os.Getenv("HOSTTEST_PRIVATE_PROBE") == "1" {
		self, err := os.Readlink("/proc/self/ns/net")
		if err != nil {
			t.Fatal(err)
		}
		if self == os.Getenv("HOSTTEST_PARENT_NETNS") {
			t.Fatalf("child runs in its parent's network namespace %s", self)
		}
		out, err := exec.Command("ip", "-o", "link", "show", "lo").CombinedOutput()
		if err != nil || !strings.Contains(string(out), ",UP") {
			t.Fatalf("lo is not up in the private namespace: %s %v", out, err)
		}
		if os.Getenv("HOSTTEST_PRIVATE_FAIL") == "1" {
			t.Fatal("asked to fail")
		}
		return
	}
	parent, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	for _, fail := range []bool{false, true} {
		t.Setenv("HOSTTEST_PRIVATE_PROBE", "1")
		t.Setenv("HOSTTEST_PARENT_NETNS", parent)
		t.Setenv("HOSTTEST_PRIVATE_FAIL", map[bool]string{true: "1"}[fail])
		saved, stdout, stderr := os.Args, os.Stdout, os.Stderr
		os.Args = []string{saved[0], "-test.run=^TestRunInPrivateNetwork$", "-test.count=1"}
		os.Stdout, os.Stderr = nil, nil // the child's "asked to fail" is not this test's
		code, err := reexecInNewNetns() // sets envPrivateNet for the child itself
		os.Args, os.Stdout, os.Stderr = saved, stdout, stderr
		if err != nil {
			t.Skipf("no private network namespace here: %v", err)
		}
		if want := map[bool]int{false: 0, true: 1}[fail]; code != want {
			t.Errorf("asked to fail=%v: exit code %d, want %d", fail, code, want)
		}
	}
}
