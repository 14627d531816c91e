package labtarget

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/lab"
)

func lockTarget(t *testing.T, stateDir string) *Target {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(stateDir, "lk"), 0o755); err != nil {
		t.Fatal(err)
	}
	return &Target{cfg: Config{Lab: lab.Config{Name: "lk", StateDir: stateDir}}}
}

// A second run on a lab in use is refused with the holder's pid and
// command line, whether the holder is another process that never wrote
// the file (the kernel's /proc/locks names it) or a cnibench run (its line
// in run.lock); stale lines from an earlier holder are replaced.
func TestLockRefusalNamesHolder(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "lk", lockFileName)

	// An earlier holder's line, left behind: the lock is free, so it is taken and the line replaced.
	first := lockTarget(t, dir)
	if err := os.WriteFile(path, []byte("pid 999999999: cnibench run --lab gone\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := first.lock(); err != nil {
		t.Fatalf("a stale line kept the lab locked: %v", err)
	}
	b, _ := os.ReadFile(path)
	if want := fmt.Sprintf("pid %d: ", os.Getpid()); !strings.HasPrefix(string(b), want) || strings.Contains(string(b), "gone") {
		t.Fatalf("run.lock = %q, want this process's line %q… only", b, want)
	}
	err := lockTarget(t, dir).lock()
	self, _ := os.Executable()
	want := fmt.Sprintf(`lab "lk" is busy with another run (pid %d: %s`, os.Getpid(), self)
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("second lock: %v, want %q…", err, want)
	}
	first.unlock()

	// A holder that wrote nothing (util-linux flock) and a stale line in the file.
	if err := os.WriteFile(path, []byte("pid 999999999: stale\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// flock(1) prints once it holds the lock and then runs sh, which waits.
	holder := exec.Command("flock", path, "sh", "-c", "echo held; exec sleep 30")
	stdout, err := holder.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := holder.Start(); err != nil {
		t.Skipf("no flock(1): %v", err)
	}
	t.Cleanup(func() { holder.Process.Kill(); holder.Wait() })
	if line, err := bufio.NewReader(stdout).ReadString('\n'); line != "held\n" {
		t.Fatalf("flock(1) did not take the lock: %q, %v", line, err)
	}
	err = lockTarget(t, dir).lock()
	want = fmt.Sprintf(`lab "lk" is busy with another run (pid %d: flock %s sh -c echo held; exec sleep 30): wait for it or use another --lab`, holder.Process.Pid, path)
	if err == nil || err.Error() != want {
		t.Fatalf("lock held by flock(1): %v, want %q", err, want)
	}
}
