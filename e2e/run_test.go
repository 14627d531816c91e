package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/hosttest"
)

// results is the part of results.json these tests read.
type results struct {
	SchemaVersion int    `json:"schema_version"`
	Status        string `json:"status"`
	Target        struct {
		Kind    string         `json:"kind"`
		Details map[string]any `json:"details"`
	} `json:"target"`
	Environment struct {
		Kernel   string `json:"kernel"`
		CPUCount int    `json:"cpu_count"`
	} `json:"environment"`
	Tool struct {
		Version string `json:"version"`
	} `json:"tool"`
	Results []struct {
		Test      string `json:"test"`
		Placement struct {
			Path, Node string
		} `json:"placement"`
		Samples []struct {
			Error  string `json:"error"`
			Engine *struct {
				ThroughputBitsSec float64 `json:"throughput_bits_per_sec"`
				PacketsSent       int64   `json:"packets_sent"`
				RatePerSec        float64 `json:"rate_per_sec"`
				Transactions      int64   `json:"transactions"`
				Stalled           bool    `json:"stalled"`
				LocalPorts        string  `json:"local_ports"`
				Latency           *struct {
					Count                              int64
					P50Us, P90Us, P99Us, P999Us, MaxUs float64
					Histogram                          string
				} `json:"latency"`
			} `json:"engine"`
			HTTP *struct {
				RPS      float64 `json:"rps"`
				OK       int64   `json:"ok"`
				Requests int64   `json:"requests"`
			} `json:"http"`
			ClientCPUSec float64 `json:"client_cpu_sec"`
			Nodes        *struct {
				Nodes []struct {
					Node      string  `json:"node"`
					CgroupSec float64 `json:"cgroup_sec"`
				} `json:"nodes"`
			} `json:"nodes_cpu"`
		} `json:"samples"`
	} `json:"results"`
}

func readResults(t *testing.T, dir string) *results {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r results
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("results.json: %v", err)
	}
	return &r
}

// Every engine on every placement of the quick profile, through the CLI,
// on a lab the run brings up and takes down itself.
func TestQuickRunEveryEngineEveryPlacement(t *testing.T) {
	l := newLab(t)
	before := hosttest.Take(t)
	out := filepath.Join(t.TempDir(), "out")
	stdout, stderr, code := l.run("run", "--profile", "quick", "--duration", "1s", "--warmup", "200ms", "--out", out)
	if code != 0 {
		t.Fatalf("run exited %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	r := readResults(t, out)
	if r.SchemaVersion != 1 || r.Status != "complete" || r.Target.Kind != "lab" || r.Environment.Kernel == "" || r.Tool.Version == "" {
		t.Fatalf("bad header: %+v", r)
	}
	if len(r.Results) != 8*3 {
		t.Fatalf("%d results, want 24 (8 tests × 3 placements)", len(r.Results))
	}
	// Every agent's effective sysctls, read in its own namespace: the
	// lab's values in pods and nodes alike.
	sys, _ := r.Target.Details["endpoint_sysctls"].(map[string]any)
	for _, ep := range []string{"node0-pod0", "node1-pod0", "node0", "node1"} {
		e, _ := sys[ep].(map[string]any)
		vals, _ := e["values"].(map[string]any)
		if vals["net.ipv4.ip_local_port_range"] != "1024 65535" || vals["net.ipv4.tcp_tw_reuse"] != "1" {
			t.Errorf("%s: effective sysctls %v, want the lab's", ep, e)
		}
	}
	seen := map[string]bool{}
	for _, res := range r.Results {
		name := res.Test + " " + res.Placement.Path + "/" + res.Placement.Node
		seen[res.Placement.Path+"/"+res.Placement.Node] = true
		if len(res.Samples) != 1 {
			t.Errorf("%s: %d samples", name, len(res.Samples))
			continue
		}
		s := res.Samples[0]
		if strings.HasPrefix(res.Test, "HTTP_") {
			if s.Error != "" || s.HTTP == nil || s.HTTP.RPS <= 0 || s.HTTP.OK != s.HTTP.Requests {
				t.Errorf("%s: bad HTTP sample: %s %+v", name, s.Error, s.HTTP)
			}
			continue
		}
		if s.Error != "" || s.Engine == nil {
			t.Errorf("%s: sample failed: %s", name, s.Error)
			continue
		}
		if strings.HasSuffix(res.Test, "RR") {
			lat := s.Engine.Latency
			if s.Engine.RatePerSec <= 0 || lat == nil || lat.Count != s.Engine.Transactions || lat.Histogram == "" {
				t.Errorf("%s: bad RR result %+v", name, s.Engine)
				continue
			}
			if !(lat.P50Us <= lat.P90Us && lat.P90Us <= lat.P99Us && lat.P99Us <= lat.P999Us && lat.P999Us <= lat.MaxUs) {
				t.Errorf("%s: percentiles out of order %+v", name, lat)
			}
		} else if s.Engine.ThroughputBitsSec <= 0 {
			t.Errorf("%s: no throughput %+v", name, s.Engine)
		}
		if s.ClientCPUSec <= 0 {
			t.Errorf("%s: no client CPU accounted", name)
		}
		// The clients are on node0: its cgroups were charged (queries per core).
		if s.Nodes == nil || len(s.Nodes.Nodes) < 2 || s.Nodes.Nodes[0].Node != "node0" || s.Nodes.Nodes[0].CgroupSec <= 0 {
			t.Errorf("%s: the nodes' CPU not recorded: %+v", name, s.Nodes)
		}
	}
	for _, p := range []string{"pod-to-pod/same-node", "pod-to-pod/other-node", "host-to-host/other-node"} {
		if !seen[p] {
			t.Errorf("placement %s missing", p)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "summary.md")); err != nil {
		t.Error(err)
	}
	if md, err := os.ReadFile(filepath.Join(out, "report.md")); err != nil || !strings.Contains(string(md), "## Queries per core") {
		t.Errorf("report.md has no Queries per core section (%v)", err)
	}
	for _, want := range []string{"TCP_CRR", "HTTP_RPS_SHORT_C64", "P99.9", "Gbit/s", "host-to-host/other-node"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("table lacks %q:\n%s", want, stdout)
		}
	}
	if left := l.leftovers(); len(left) > 0 {
		t.Errorf("run left lab objects behind: %v", left)
	}
	hosttest.AssertUnchanged(t, before, "after the run")
}

// SIGTERM mid-run: the run stops, keeps completed samples, says so, and
// takes down the lab it made.
func TestSIGTERMKeepsCompletedSamples(t *testing.T) {
	l := newLab(t)
	out := filepath.Join(t.TempDir(), "out")
	c := l.cmd("run", "--tests", "TCP_RR", "--placements", "pod-to-pod/same-node", "--rounds", "50", "--duration", "300ms", "--warmup", "0s", "--out", out)
	var stderr strings.Builder
	c.Stderr = &stderr
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "two completed samples", 60*time.Second, func() bool {
		b, _ := os.ReadFile(filepath.Join(out, "results.json"))
		return strings.Count(string(b), `"round"`) >= 2
	})
	c.Process.Signal(syscall.SIGTERM)
	err := c.Wait()
	if err == nil {
		t.Fatal("interrupted run exited 0")
	}
	r := readResults(t, out)
	if r.Status != "interrupted" {
		t.Fatalf("status = %q, want interrupted", r.Status)
	}
	n := len(r.Results[0].Samples)
	if n < 2 || n >= 50 {
		t.Fatalf("%d samples kept", n)
	}
	for _, s := range r.Results[0].Samples {
		if s.Error != "" {
			t.Errorf("kept a failed sample: %s", s.Error)
		}
	}
	if !strings.Contains(stderr.String(), "interrupted") {
		t.Errorf("stderr does not say interrupted:\n%s", stderr.String())
	}
	if left := l.leftovers(); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}

// SIGKILL mid-run leaves the lab up (nobody could clean it); lab down must
// then remove everything, agents included, and what a stopped agent (which
// cannot exit at its stdin's EOF and clean up) keeps in its TMPDIR.
func TestSIGKILLThenLabDownLeavesNothing(t *testing.T) {
	l := newLab(t)
	tmp := l.privateTemp()
	before := hosttest.Take(t)
	out := filepath.Join(t.TempDir(), "out")
	c := l.cmd("run", "--tests", "TCP_STREAM", "--rounds", "50", "--duration", "300ms", "--warmup", "0s", "--out", out)
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a completed sample", 60*time.Second, func() bool {
		b, _ := os.ReadFile(filepath.Join(out, "results.json"))
		return strings.Contains(string(b), `"round"`)
	})
	pid := l.agentPID("node1-pod0") // the server of pod-to-pod/other-node, with a DNS server
	if pid == 0 || len(dnsFiles(tmp)) == 0 {
		t.Fatalf("agent on node1-pod0 %d, DNS server configs under TMPDIR %s: %v, want the server agents'", pid, tmp, dnsFiles(tmp))
	}
	syscall.Kill(pid, syscall.SIGSTOP)
	c.Process.Kill()
	c.Wait()
	if left := l.leftovers(); len(left) == 0 {
		t.Fatal("nothing left after SIGKILL: the test would not notice a broken lab down")
	}
	_, stderr, code := l.run("lab", "down")
	if code != 0 {
		t.Fatalf("lab down: %s", stderr)
	}
	waitFor(t, "no leftovers", 5*time.Second, func() bool { return len(l.leftovers()) == 0 })
	if _, stderr, code := l.run("lab", "down"); code != 0 {
		t.Fatalf("second lab down (idempotent): %s", stderr)
	}
	r := readResults(t, out)
	if len(r.Results) == 0 || len(r.Results[0].Samples) == 0 {
		t.Fatal("completed samples lost after SIGKILL")
	}
	assertEmpty(t, tmp)
	hosttest.AssertUnchanged(t, before, "after the run")
}
