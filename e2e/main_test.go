// Package e2e drives the built cnibench binary as a user would, on the real
// kernel, as root: full runs on the lab, bad input, signals and crashes.
package e2e

import (
	"bytes"
	"cmp"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/hosttest"
)

var binary string

// TestMain builds the binary and runs the tests, next to a noisy neighbour
// when CNIBENCH_NOISY_NEIGHBOUR=1 (hosttest.RunMain, which also serves the
// neighbour's own process before any build).
func TestMain(m *testing.M) { os.Exit(hosttest.RunMain(e2eMain{m})) }

type e2eMain struct{ m *testing.M }

func (e e2eMain) Run() int {
	dir, err := os.MkdirTemp("", "cnibench-e2e-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o755) // TestNoRootOneLineError runs the binary as nobody
	binary = filepath.Join(dir, "cnibench")
	build := exec.Command("go", "build", "-o", binary, "../cmd/cnibench")
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: build failed:", err)
		return 1
	}
	return e.m.Run()
}

// lab is one test's lab name and state dir, torn down at the end.
type lab struct {
	t        *testing.T
	name     string
	stateDir string
	wrap     []string // prefix of every cnibench command, e.g. nsenter into a mount namespace
	tmp      string   // TMPDIR of every cnibench command (privateTemp), "" for the test's
}

func newLab(t *testing.T) *lab {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("lab tests need root")
	}
	// A short state dir: agent sockets live there and sun_path is 108 bytes.
	stateDir, err := os.MkdirTemp("", "cnb")
	if err != nil {
		t.Fatal(err)
	}
	l := &lab{t: t, name: fmt.Sprintf("e%d", rand.Intn(1e6)), stateDir: stateDir}
	t.Cleanup(func() {
		out, err := l.cmd("lab", "down").CombinedOutput()
		if err != nil {
			t.Errorf("lab down: %v: %s", err, out)
		}
		os.RemoveAll(stateDir)
	})
	return l
}

func (l *lab) cmd(args ...string) *exec.Cmd {
	argv := append(append(slices.Clone(l.wrap), binary, "--lab", l.name, "--state-dir", l.stateDir), args...)
	c := exec.Command(argv[0], argv[1:]...)
	if l.tmp != "" {
		c.Env = append(os.Environ(), "TMPDIR="+l.tmp)
	}
	return c
}

// run runs cnibench and returns stdout, stderr and the exit code.
func (l *lab) run(args ...string) (string, string, int) {
	c := l.cmd(args...)
	var stdout, stderr bytes.Buffer
	c.Stdout, c.Stderr = &stdout, &stderr
	err := c.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		l.t.Fatalf("cnibench %v: %v", args, err)
	}
	return stdout.String(), stderr.String(), code
}

// leftovers lists lab objects that still exist: namespaces, cgroups,
// state, temporary directories, processes of ours.
func (l *lab) leftovers() []string {
	var left []string
	prefix := "cnb-" + l.name + "-"
	if ents, err := os.ReadDir("/run/netns"); err == nil {
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), prefix) {
				left = append(left, "netns "+e.Name())
			}
		}
	}
	for _, root := range []string{"/sys/fs/cgroup/unified", "/sys/fs/cgroup"} {
		if _, err := os.Stat(filepath.Join(root, "cnb-"+l.name)); err == nil {
			left = append(left, "cgroup "+filepath.Join(root, "cnb-"+l.name))
		}
	}
	if _, err := os.Stat(filepath.Join(l.stateDir, l.name)); err == nil {
		left = append(left, "state "+filepath.Join(l.stateDir, l.name))
	}
	tmp := cmp.Or(l.tmp, os.TempDir())
	if ents, err := os.ReadDir(tmp); err == nil {
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), prefix) {
				left = append(left, "temp dir "+filepath.Join(tmp, e.Name()))
			}
		}
	}
	if out, _ := exec.Command("pgrep", "-f", l.stateDir+"/"+l.name+"/").Output(); len(bytes.TrimSpace(out)) > 0 {
		left = append(left, "processes "+strings.Join(strings.Fields(string(out)), ","))
	}
	return left
}

// privateTemp gives the lab's cnibench commands, and the agents they
// start, a temp root of their own (TMPDIR), to see what they leave in it.
// Searchable by all, as /tmp: an agent's dnsmasq reads its files as nobody.
func (l *lab) privateTemp() string {
	l.t.Helper()
	dir, err := os.MkdirTemp("", "cnbtmp")
	if err != nil {
		l.t.Fatal(err)
	}
	l.t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		l.t.Fatal(err)
	}
	l.tmp = dir
	return dir
}

// dnsFiles lists the DNS server configs (dnsmasq.conf) under dir.
func dnsFiles(dir string) []string {
	var found []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Name() == "dnsmasq.conf" {
			found = append(found, p)
		}
		return nil
	})
	return found
}

// assertEmpty fails the test when dir holds anything.
func assertEmpty(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		t.Errorf("left in the temp root: %s", filepath.Join(dir, e.Name()))
	}
}

func waitFor(t *testing.T, what string, timeout time.Duration, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if ok() {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("timed out after %s waiting for %s", timeout, what)
}
