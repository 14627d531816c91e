package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cnibench/cnibench/internal/hosttest"
)

// A teardown that fails (here: a mount inside the lab's state dir, which
// lab down cannot remove) exits 4 with one line saying the samples stand
// and what to run, records it in results.json and the report; once the
// cause is gone, that command removes everything.
func TestFailedTeardownExitCode(t *testing.T) {
	l := newLab(t)
	before := hosttest.Take(t)
	out := filepath.Join(t.TempDir(), "out")
	p := l.start("run", "--tests", "TCP_RR", "--placements", "pod-to-pod/same-node", "--rounds", "3",
		"--duration", "300ms", "--warmup", "0s", "--out", out)
	p.waitOutput(t, "agents ... ready", time.Minute)
	busy := filepath.Join(l.stateDir, l.name, "busy")
	if err := os.Mkdir(busy, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", busy, "tmpfs", 0, "size=4k"); err != nil {
		t.Fatal(err)
	}
	mounted := true
	t.Cleanup(func() {
		if mounted {
			unix.Unmount(busy, unix.MNT_DETACH)
		}
	})
	code := p.wait(t, time.Minute)
	stderr := p.output()
	if code != 4 {
		t.Errorf("exit %d, want 4:\n%s", code, stderr)
	}
	want := "cnibench: teardown failed: "
	line := ""
	for _, s := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(s, want) {
			line = s
		}
	}
	for _, part := range []string{"device or resource busy", "the samples in " + filepath.Join(out, "results.json") + " stand",
		"remove what is left with: cnibench --lab " + l.name + " --state-dir " + l.stateDir + " lab down"} {
		if !strings.Contains(line, part) {
			t.Errorf("no %q in the teardown line %q:\n%s", part, line, stderr)
		}
	}
	b, err := os.ReadFile(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r struct{ Status, Teardown string }
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	if r.Status != "complete" || !strings.Contains(r.Teardown, "device or resource busy") {
		t.Errorf("results.json: status %q, teardown %q", r.Status, r.Teardown)
	}
	if md, _ := os.ReadFile(filepath.Join(out, "report.md")); !strings.Contains(string(md), "teardown failed") {
		t.Error("report.md does not say the teardown failed")
	}
	if err := unix.Unmount(busy, 0); err != nil {
		t.Fatal(err)
	}
	mounted = false
	assertLabDownLeavesNothing(t, []*lab{l})
	hosttest.AssertUnchanged(t, before, "after the run")
}
