package e2e

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// stderrFile is a file for a command's stderr and a reader of what it
// holds so far, for a test that watches a running command.
func stderrFile(t *testing.T) (*os.File, func() string) {
	t.Helper()
	f, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f, func() string {
		b, _ := os.ReadFile(f.Name())
		return string(b)
	}
}

// agentPID is the pid of the agent the run started on endpoint (its
// control socket names it), 0 when there is none.
func (l *lab) agentPID(endpoint string) int {
	out, _ := exec.Command("pgrep", "-f", "agent --control unix:"+filepath.Join(l.stateDir, l.name, "agents", endpoint+".sock")).Output()
	f := strings.Fields(string(out))
	if len(f) != 1 {
		return 0
	}
	pid, _ := strconv.Atoi(f[0])
	return pid
}

// An agent SIGKILLed during a sample's measured interval fails that
// sample with the cause, at once (the client's) or when the client's run
// ends (the server's); a fresh agent measures the next samples; the run
// exits 5 (samples failed) and leaves nothing behind, not even the
// killed server's DNS server files.
func TestAgentKilledMidSample(t *testing.T) {
	l := newLab(t)
	tmp := l.privateTemp()
	out := filepath.Join(t.TempDir(), "out")
	const rounds, duration = 5, 3 * time.Second
	c := l.cmd("run", "--tests", "TCP_RR", "--placements", "pod-to-pod/other-node", "--rounds", strconv.Itoa(rounds),
		"--duration", duration.String(), "--warmup", "0s", "--out", out)
	errFile, stderr := stderrFile(t)
	c.Stderr = errFile
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	kills := map[int]string{2: "node0-pod0", 4: "node1-pod0"} // round → endpoint: the client, then the server
	for round := 1; round <= rounds; round++ {
		ep, ok := kills[round]
		if !ok {
			continue
		}
		waitFor(t, "sample "+strconv.Itoa(round), 60*time.Second, func() bool {
			return strings.Contains(stderr(), "["+strconv.Itoa(round)+"/")
		})
		time.Sleep(duration / 3) // inside the measured interval
		pid := l.agentPID(ep)
		if pid == 0 {
			t.Fatalf("round %d: no agent on %s to kill", round, ep)
		}
		if f := dnsFiles(tmp); len(f) != 1 {
			t.Fatalf("round %d: DNS server configs under TMPDIR %s: %v, want the server agent's", round, tmp, f)
		}
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
	}
	err := c.Wait()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	}
	if code != 5 {
		t.Fatalf("exit status %d (%v), want 5 (samples failed):\n%s", code, err, stderr())
	}
	if !strings.Contains(stderr(), "cnibench: 2 of 5 samples failed (first: agent on node0-pod0 died: signal: killed)") {
		t.Errorf("stderr does not say which samples failed and why:\n%s", stderr())
	}
	var doc struct {
		Status  string
		Results []struct {
			Samples []struct {
				Round      int
				Start, End time.Time
				Error      string
				Engine     *struct {
					Transactions int64
				}
			}
		}
	}
	b, err := os.ReadFile(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Status != "complete" || len(doc.Results) != 1 || len(doc.Results[0].Samples) != rounds {
		t.Fatalf("status %q, %d results, want complete with %d samples", doc.Status, len(doc.Results), rounds)
	}
	for _, s := range doc.Results[0].Samples {
		ep, killed := kills[s.Round]
		switch {
		case killed && s.Error != "agent on "+ep+" died: signal: killed":
			t.Errorf("round %d: error %q, want the killed agent named with the cause", s.Round, s.Error)
		case killed && s.End.Sub(s.Start) > duration+5*time.Second:
			t.Errorf("round %d: the failed sample took %s: the death was not noticed at once", s.Round, s.End.Sub(s.Start))
		case !killed && (s.Error != "" || s.Engine == nil || s.Engine.Transactions == 0):
			t.Errorf("round %d: %q, want a measured sample from the fresh agents", s.Round, s.Error)
		}
	}
	if left := l.leftovers(); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
	assertEmpty(t, tmp)
}

// A second run on a lab another run is using is refused at once, naming
// the first run's pid and command line; the first run goes on.
func TestSecondRunRefusedNamesHolder(t *testing.T) {
	l := newLab(t)
	if _, stderr, code := l.run("lab", "up", "--nodes", "2", "--pods-per-node", "1"); code != 0 {
		t.Fatalf("lab up: %s", stderr)
	}
	out := filepath.Join(t.TempDir(), "out")
	first := l.cmd("run", "--tests", "TCP_RR", "--placements", "pod-to-pod/other-node", "--rounds", "50", "--duration", "300ms", "--warmup", "0s", "--out", out)
	errFile, _ := stderrFile(t)
	first.Stderr = errFile
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	defer first.Process.Kill()
	waitFor(t, "the first run's first sample", 60*time.Second, func() bool {
		b, _ := os.ReadFile(filepath.Join(out, "results.json"))
		return strings.Contains(string(b), `"round"`)
	})
	_, errOut, code := l.run("run", "--tests", "TCP_RR", "--placements", "pod-to-pod/other-node", "--out", filepath.Join(t.TempDir(), "second"))
	want := fmt.Sprintf("cnibench: lab %q is busy with another run (pid %d: %s --lab %s --state-dir %s run --tests TCP_RR", l.name, first.Process.Pid, binary, l.name, l.stateDir)
	lines := strings.Split(strings.TrimSpace(errOut), "\n")
	if last := lines[len(lines)-1]; code != 1 || !strings.HasPrefix(last, want) || !strings.HasSuffix(last, "): wait for it or use another --lab") {
		t.Errorf("second run: exit %d, stderr %q, want exit 1 and a last line starting %q", code, errOut, want)
	}
	first.Process.Signal(syscall.SIGTERM)
	first.Wait()
	r := readResults(t, out)
	if len(r.Results) == 0 || len(r.Results[0].Samples) == 0 {
		t.Fatalf("the first run kept no sample: %+v", r.Results)
	}
	for _, s := range r.Results[0].Samples {
		if s.Error != "" {
			t.Errorf("the first run was disturbed: %s", s.Error)
		}
	}
}

// runInTmpfs runs cnibench run with --out on a fresh 2 MiB tmpfs in a
// private mount namespace (the host never sees the mount), calls fault
// with the namespace's pid once two samples are saved, and returns the run's
// stderr, exit status, and results.json and the directory listing as they
// were when the run ended.
func runInTmpfs(t *testing.T, l *lab, fault func(pid int, out string)) (stderr string, code int, doc []byte, files []string) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "out")
	keep := t.TempDir()
	if err := os.Mkdir(out, 0o755); err != nil {
		t.Fatal(err)
	}
	script := `mount -t tmpfs -o size=2m cnb-faults "$OUT" || exit 99
"$@"; code=$?
cp "$OUT/results.json" "$KEEP/results.json"; ls -A "$OUT" > "$KEEP/ls"
exit $code`
	args := append([]string{"--mount", "--propagation", "private", "sh", "-c", script, "sh"}, l.cmd("run", "--tests", "TCP_RR",
		"--placements", "pod-to-pod/other-node", "--rounds", "50", "--duration", "300ms", "--warmup", "0s", "--out", out).Args...)
	c := exec.Command("unshare", args...)
	c.Env = append(os.Environ(), "OUT="+out, "KEEP="+keep)
	errFile, errOut := stderrFile(t)
	c.Stderr = errFile
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	inNS := fmt.Sprintf("/proc/%d/root%s", c.Process.Pid, out) // the run's out, seen through its namespace
	waitFor(t, "two saved samples", 60*time.Second, func() bool {
		b, _ := os.ReadFile(filepath.Join(inNS, "results.json"))
		return strings.Count(string(b), `"round"`) >= 2
	})
	fault(c.Process.Pid, out)
	err := c.Wait()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	}
	doc, _ = os.ReadFile(filepath.Join(keep, "results.json"))
	ls, _ := os.ReadFile(filepath.Join(keep, "ls"))
	return errOut(), code, doc, strings.Fields(string(ls))
}

// The results directory filling up or turning read-only mid-run: the run
// stops with exit 1 and one line naming results.json, the cause and how
// many samples the file keeps; results.json is the last complete document
// with every one of them; no temp file is left; the agents are stopped.
func TestResultsDiskFullOrReadOnly(t *testing.T) {
	l := newLab(t)
	if _, stderr, code := l.run("lab", "up", "--nodes", "2", "--pods-per-node", "1"); code != 0 {
		t.Fatalf("lab up: %s", stderr)
	}
	for _, c := range []struct {
		name, cause string
		fault       func(t *testing.T, pid int, out string)
	}{
		{"disk full", "no space left on device", func(t *testing.T, pid int, out string) {
			filler := fmt.Sprintf("/proc/%d/root%s/filler", pid, out)
			if err := os.WriteFile(filler, make([]byte, 4<<20), 0o644); !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("filling the 2 MiB tmpfs: %v, want ENOSPC", err)
			}
		}},
		{"read-only", "read-only file system", func(t *testing.T, pid int, out string) {
			if b, err := exec.Command("nsenter", "-t", strconv.Itoa(pid), "-m", "mount", "-o", "remount,ro", out).CombinedOutput(); err != nil {
				t.Fatalf("remount ro: %v: %s", err, b)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			stderr, code, doc, files := runInTmpfs(t, l, func(pid int, out string) { c.fault(t, pid, out) })
			lines := strings.Split(strings.TrimSpace(stderr), "\n")
			last := lines[len(lines)-1]
			var out string
			var kept int
			if _, err := fmt.Sscanf(last, "cnibench: write %s", &out); err != nil || !strings.HasSuffix(out, "/out/results.json:") {
				t.Fatalf("exit %d, last line %q, want one naming results.json:\n%s", code, last, stderr)
			}
			want := fmt.Sprintf("cnibench: write %s %s; the run stopped: it keeps the ", out, c.cause)
			rest, ok := strings.CutPrefix(last, want)
			if _, err := fmt.Sscanf(rest, "%d samples saved before", &kept); code != 1 || !ok || err != nil || kept < 2 {
				t.Fatalf("exit %d, last line %q, want exit 1 and %q<n ≥ 2> samples saved before", code, last, want)
			}
			var r struct {
				Results []struct{ Samples []struct{ Error string } }
			}
			if err := json.Unmarshal(doc, &r); err != nil {
				t.Fatalf("results.json after the fault: %v", err)
			}
			if len(r.Results) != 1 || len(r.Results[0].Samples) != kept {
				t.Fatalf("results.json holds %+v, want the %d samples the error names", r.Results, kept)
			}
			for _, s := range r.Results[0].Samples {
				if s.Error != "" {
					t.Errorf("saved sample failed: %s", s.Error)
				}
			}
			for _, f := range files {
				if f != "results.json" && f != "filler" {
					t.Errorf("left in the results directory: %s", f)
				}
			}
			for _, ep := range []string{"node0-pod0", "node1-pod0"} {
				if pid := l.agentPID(ep); pid != 0 {
					t.Errorf("agent on %s (pid %d) still running after the run", ep, pid)
				}
			}
		})
	}
}
