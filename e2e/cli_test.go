package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/cnibench/cnibench/internal/hosttest"
)

// Bad input gets one line naming the problem, a non-zero exit, and nothing
// half-made: no results directory, no lab.
func TestBadInputOneLineErrors(t *testing.T) {
	l := newLab(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "a-file")
	os.WriteFile(file, nil, 0o644)
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"run", "--tests", "TCP_FOO"}, `unknown test "TCP_FOO"`},
		{[]string{"run", "--profile", "huge"}, `unknown profile "huge"`},
		{[]string{"run", "--rounds", "0"}, `for "--rounds" flag: must be at least 1`},
		{[]string{"run", "--rounds", "auto:99"}, `for "--rounds" flag: auto:99: the most rounds must be 5 to 40`},
		{[]string{"run", "--streams", "0"}, "--streams must be at least 1"},
		{[]string{"run", "--duration", "-1s"}, "--duration must be positive"},
		{[]string{"run", "--placements", "pod-to-moon"}, `unknown placement "pod-to-moon"`},
		{[]string{"run", "--target", "cloud"}, `--target "cloud"`},
		{[]string{"run", "--out", filepath.Join(file, "sub")}, "--out"},
		{[]string{"lab", "up", "--nodes", "0"}, "--nodes must be at least 1"},
		{[]string{"lab", "up", "--pods-per-node", "0"}, "--pods-per-node must be at least 1"},
		{[]string{"lab", "exec", "node9", "--", "true"}, "lab"},
		{[]string{"run", "--bogus"}, "unknown flag: --bogus"},
		{[]string{"run", "--cpu-pinning", "half"}, `--cpu-pinning must be split or none, got "half"`},
	}
	for _, c := range cases {
		out := filepath.Join(dir, "out-"+strings.ReplaceAll(strings.Join(c.args, "_"), "/", "_"))
		args := c.args
		if !strings.Contains(strings.Join(args, " "), "--out") && args[0] == "run" {
			args = append(args, "--out", out)
		}
		_, stderr, code := l.run(args...)
		if code == 0 {
			t.Errorf("%v: exit 0", c.args)
		}
		if strings.Count(strings.TrimSpace(stderr), "\n") != 0 || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: stderr = %q, want one line containing %q", c.args, stderr, c.want)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("%v: created %s", c.args, out)
		}
	}
	if left := l.leftovers(); len(left) > 0 {
		t.Errorf("bad input left objects: %v", left)
	}
}

func TestNoRootOneLineError(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to drop to nobody")
	}
	dir := t.TempDir()
	os.Chmod(dir, 0o777)
	out := filepath.Join(dir, "out")
	for _, args := range [][]string{{"run", "--out", out}, {"lab", "up"}, {"lab", "down"}} {
		c := exec.Command(binary, append([]string{"--state-dir", dir}, args...)...)
		c.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		b, err := c.CombinedOutput()
		if err == nil {
			t.Errorf("%v as nobody: exit 0", args)
		}
		s := strings.TrimSpace(string(b))
		if strings.Contains(s, "\n") || !strings.Contains(s, "root") {
			t.Errorf("%v as nobody: %q, want one line mentioning root", args, s)
		}
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("run as nobody created the results directory")
	}
}

func TestLabUpStatusExecDown(t *testing.T) {
	l := newLab(t)
	before := hosttest.Take(t)
	if _, stderr, code := l.run("lab", "up", "--nodes", "3", "--pods-per-node", "1"); code != 0 {
		t.Fatalf("lab up: %s", stderr)
	}
	if _, stderr, code := l.run("lab", "up"); code == 0 || !strings.Contains(stderr, "exist") {
		t.Errorf("second lab up: exit %d, %q; want a one-line 'already exists' error", code, stderr)
	}
	status, stderr, code := l.run("lab", "status")
	if code != 0 || !strings.Contains(status, "node2-pod0") || !strings.Contains(status, "198.19.2.10") {
		t.Fatalf("lab status: %d %s %s", code, status, stderr)
	}
	// exec runs in the pod's namespace: it sees the pod's address and
	// routes, and reaches a pod on another node.
	addr, _, code := l.run("lab", "exec", "node1-pod0", "--", "ip", "-4", "-o", "addr", "show", "dev", "eth0")
	if code != 0 || !strings.Contains(addr, "198.19.1.10/32") {
		t.Fatalf("exec ip addr in node1-pod0: %q", addr)
	}
	if _, stderr, code := l.run("lab", "exec", "node0-pod0", "--", "ping", "-c1", "-W2", "198.19.2.10"); code != 0 {
		t.Errorf("ping node0-pod0 → node2-pod0: %s", stderr)
	}
	routes, _, _ := l.run("lab", "exec", "node0-pod0", "--", "ip", "route")
	if strings.Contains(routes, "default") {
		t.Errorf("pod has a default route:\n%s", routes)
	}
	if _, _, code := l.run("lab", "exec", "node0", "--", "sh", "-c", "exit 7"); code != 7 {
		t.Errorf("exec exit code = %d, want the command's 7", code)
	}
	if _, stderr, code := l.run("lab", "down"); code != 0 {
		t.Fatalf("lab down: %s", stderr)
	}
	if left := l.leftovers(); len(left) > 0 {
		t.Errorf("left: %v", left)
	}
	hosttest.AssertUnchanged(t, before, "after the run")
}
