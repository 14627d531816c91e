package e2e

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/hosttest"
)

// started is a cnibench process whose stderr (progress) is watched as it
// comes, partial lines included ("bringing up lab ..." ends later).
type started struct {
	c      *exec.Cmd
	mu     sync.Mutex
	stderr strings.Builder
	done   chan struct{}
	code   int
}

func (l *lab) start(args ...string) *started {
	l.t.Helper()
	p := &started{c: l.cmd(args...), done: make(chan struct{})}
	pipe, err := p.c.StderrPipe()
	if err != nil {
		l.t.Fatal(err)
	}
	if err := p.c.Start(); err != nil {
		l.t.Fatal(err)
	}
	go func() {
		r := bufio.NewReader(pipe)
		buf := make([]byte, 4096)
		for {
			n, err := r.Read(buf)
			p.mu.Lock()
			p.stderr.Write(buf[:n])
			p.mu.Unlock()
			if err != nil {
				break
			}
		}
		err := p.c.Wait()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			p.code = ee.ExitCode()
		}
		close(p.done)
	}()
	l.t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			p.c.Process.Kill()
			<-p.done
		}
	})
	return p
}

func (p *started) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stderr.String()
}

// waitOutput waits until stderr contains s (the phase's progress line).
func (p *started) waitOutput(t *testing.T, s string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if strings.Contains(p.output(), s) {
			return
		}
		select {
		case <-p.done:
			t.Fatalf("cnibench exited %d before %q:\n%s", p.code, s, p.output())
		case <-time.After(5 * time.Millisecond):
		}
	}
	t.Fatalf("no %q on stderr after %s:\n%s", s, timeout, p.output())
}

// wait waits for the process to exit and returns its exit code.
func (p *started) wait(t *testing.T, timeout time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
		return p.code
	case <-time.After(timeout):
		t.Fatalf("cnibench still running %s after the signal:\n%s", timeout, p.output())
	}
	return 0
}

// mountsUnder lists mount points under dir (a bpffs or anything else a
// run left mounted in its state dir).
func mountsUnder(t *testing.T, dir string) []string {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 4 && strings.HasPrefix(f[4], dir+"/") {
			out = append(out, f[4])
		}
	}
	return out
}

// A signal in each phase of a run: the run stops, says so, exits
// 128+signal, keeps the samples it completed, and after `lab down`
// nothing of the lab is left (namespaces and the rules in them,
// cgroups, state, processes, mounts) and the root namespace is as it was.
// Each case waits for its phase's progress line before signalling and
// checks from the output that the signal landed in that phase.
func TestSignalInEveryPhase(t *testing.T) {
	cases := []struct {
		name     string
		sig      syscall.Signal
		scenario string // the lab suffix a --scenarios run adds to --lab
		args     []string
		phase    string // progress that marks the phase
		landed   string // progress proving the signal cut that phase short
		notAfter string // progress the phase would print had it ended normally
		status   string // results.json status; "" = no results.json
		samples  bool   // completed samples must be kept
	}{
		{name: "bring-up", sig: syscall.SIGINT,
			// 8 × 16 takes ~300 ms to build, ample time to land in it.
			args:  []string{"--nodes", "8", "--pods-per-node", "16", "--tests", "TCP_RR", "--placements", "pod-to-pod/same-node", "--rounds", "1"},
			phase: "bringing up lab", landed: " interrupted\n", notAfter: "done in"},
		{name: "programming-services", sig: syscall.SIGTERM, scenario: "nft",
			// kube-proxy's nftables layout takes ~1.5 s for 2,000 Services here.
			args:  []string{"--tests", "service-scale", "--scenarios", "nftables", "--scale-steps", "2000", "--rounds", "1"},
			phase: "2000 Services: programming", landed: "interrupted after", notAfter: "verifying", status: "interrupted"},
		{name: "measuring", sig: syscall.SIGTERM,
			args:  []string{"--service-datapath", "iptables", "--tests", "TCP_RR", "--placements", "pod-to-service/other-node", "--rounds", "50"},
			phase: "[2/50]", landed: "interrupted\n", status: "interrupted", samples: true},
		{name: "teardown", sig: syscall.SIGINT, scenario: "ebpf",
			args:  []string{"--scenarios", "ebpf", "--tests", "TCP_RR", "--placements", "pod-to-service/other-node", "--rounds", "2"},
			phase: "taking lab", landed: "down ...\ncnibench: SIGINT: stopping", notAfter: "down ... done", status: "complete", samples: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l := newLab(t)
			labs := []*lab{l}
			if tc.scenario != "" {
				labs = append(labs, scenarioLabs(t, l, tc.scenario)...)
			}
			before := hosttest.Take(t)
			out := filepath.Join(t.TempDir(), "out")
			args := append([]string{"run", "--duration", "300ms", "--warmup", "0s", "--out", out}, tc.args...)
			p := l.start(args...)
			p.waitOutput(t, tc.phase, 2*time.Minute)
			p.c.Process.Signal(tc.sig)
			code := p.wait(t, time.Minute)
			stderr := p.output()
			if strings.Contains(stderr, "unsupported") {
				t.Skipf("unsupported here: %s", stderr)
			}
			if want := 128 + int(tc.sig); code != want {
				t.Errorf("exit %d, want %d (128+%s)\n%s", code, want, tc.sig, stderr)
			}
			t.Logf("stderr:\n%s", stderr)
			if !strings.Contains(stderr, tc.landed) || (tc.notAfter != "" && strings.Contains(stderr, tc.notAfter)) {
				t.Errorf("the signal did not land in the %s phase (no %q):\n%s", tc.name, tc.landed, stderr)
			}
			if !strings.Contains(stderr, "stopping and cleaning up") || !strings.Contains(stderr, "cnibench: interrupted") {
				t.Errorf("stderr does not say it stops and was interrupted:\n%s", stderr)
			}
			checkKept(t, out, tc.status, tc.samples)
			assertLabDownLeavesNothing(t, labs)
			hosttest.AssertUnchanged(t, before, "after the run")
		})
	}
}

// A second signal while the run cleans up exits at once, saying what to
// run; that command then removes everything.
func TestSecondSignalAbortsThenLabDownCleans(t *testing.T) {
	l := newLab(t)
	before := hosttest.Take(t)
	out := filepath.Join(t.TempDir(), "out")
	p := l.start("run", "--service-datapath", "nftables", "--tests", "TCP_RR", "--placements", "pod-to-service/other-node",
		"--rounds", "50", "--duration", "2s", "--warmup", "0s", "--out", out)
	p.waitOutput(t, "[2/50]", 2*time.Minute)
	p.c.Process.Signal(syscall.SIGINT)
	p.waitOutput(t, "stopping and cleaning up", 10*time.Second)
	p.c.Process.Signal(syscall.SIGINT)
	code := p.wait(t, 10*time.Second)
	stderr := p.output()
	if code != 130 {
		t.Errorf("exit %d, want 130:\n%s", code, stderr)
	}
	if !strings.Contains(stderr, "second SIGINT: exiting without cleaning up; remove what is left with: cnibench --lab "+l.name) {
		t.Errorf("no abort line naming lab down:\n%s", stderr)
	}
	checkKept(t, out, "", true)
	assertLabDownLeavesNothing(t, []*lab{l})
	hosttest.AssertUnchanged(t, before, "after the run")
}

// checkKept checks results.json: its status (none expected when status is
// "") and, if samples, at least one completed sample and no failed one.
func checkKept(t *testing.T, out, status string, samples bool) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(out, "results.json")); err != nil {
		if status != "" || samples {
			t.Errorf("no results.json: %v", err)
		}
		return
	}
	r := readResults(t, out)
	if status != "" && r.Status != status {
		t.Errorf("status %q, want %q", r.Status, status)
	}
	n := 0
	for _, res := range r.Results {
		for _, s := range res.Samples {
			n++
			if s.Error != "" {
				t.Errorf("kept a failed sample: %s", s.Error)
			}
		}
	}
	if samples && n == 0 {
		t.Error("completed samples lost")
	}
}

// assertLabDownLeavesNothing runs lab down on every lab and checks that
// nothing of them is left.
func assertLabDownLeavesNothing(t *testing.T, labs []*lab) {
	t.Helper()
	for _, l := range labs {
		if _, stderr, code := l.run("lab", "down"); code != 0 {
			t.Errorf("lab down --lab %s: exit %d: %s", l.name, code, stderr)
		}
		if left := l.leftovers(); len(left) > 0 {
			t.Errorf("lab %s: left after lab down: %v", l.name, left)
		}
		if m := mountsUnder(t, l.stateDir); len(m) > 0 {
			t.Errorf("mounts left in the state dir: %v", m)
		}
	}
}
