package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// syncBuffer is a bytes.Buffer the test reads while the command writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
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
// exits 4 (samples failed) and leaves nothing behind.
func TestAgentKilledMidSample(t *testing.T) {
	l := newLab(t)
	out := filepath.Join(t.TempDir(), "out")
	const rounds, duration = 5, 3 * time.Second
	c := l.cmd("run", "--tests", "TCP_RR", "--placements", "pod-to-pod/other-node", "--rounds", strconv.Itoa(rounds),
		"--duration", duration.String(), "--warmup", "0s", "--out", out)
	var stderr syncBuffer
	c.Stderr = &stderr
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
			return strings.Contains(stderr.String(), "["+strconv.Itoa(round)+"/")
		})
		time.Sleep(duration / 3) // inside the measured interval
		pid := l.agentPID(ep)
		if pid == 0 {
			t.Fatalf("round %d: no agent on %s to kill", round, ep)
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
	if code != 4 {
		t.Fatalf("exit status %d (%v), want 4 (samples failed):\n%s", code, err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "cnibench: 2 of 5 samples failed (first: agent on node0-pod0 died: signal: killed)") {
		t.Errorf("stderr does not say which samples failed and why:\n%s", stderr.String())
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
	var stderr syncBuffer
	first.Stderr = &stderr
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
