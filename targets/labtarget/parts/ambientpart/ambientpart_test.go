package ambientpart_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/netnsx"
	"github.com/cnibench/cnibench/lab"
	"github.com/cnibench/cnibench/lab/haproxy"
	"github.com/cnibench/cnibench/lab/labtest"
	"github.com/cnibench/cnibench/results"
	"github.com/cnibench/cnibench/suite"
	"github.com/cnibench/cnibench/targets/labtarget"
	_ "github.com/cnibench/cnibench/targets/labtarget/parts/all"
)

// TestConflicts: the mesh goes with a netfilter Service datapath, not
// with an L7 model, policy, WireGuard or a socket-level datapath; the
// waypoint only after it; the counterpart model (eBPF, WireGuard, the
// per-node L7 proxy) configures beside them.
func TestConflicts(t *testing.T) {
	for sc, want := range map[string]string{
		"iptables+ambient":           "",
		"ambient":                    "",
		"iptables+ambient+flows":     "",
		"iptables+ambient+l7-node":   "L7",
		"iptables+ambient+policy":    "policy would deny the proxies",
		"iptables+wireguard+ambient": "wireguard encrypts between the nodes already",
		"ebpf+ambient":               "outside netfilter",
		"iptables+ambient+waypoint":  "",
		"ebpf+wireguard+l7-node":     "", // the counterpart the issue compares with
		"iptables+waypoint":          "add ambient",
		"iptables+waypoint+ambient":  "write ambient before it",
	} {
		n, err := results.ParseScenarioName(sc)
		if err != nil {
			t.Fatal(err)
		}
		_, err = labtarget.ScenarioConfig(n, lab.Config{Nodes: 2, PodsPerNode: 2, StateDir: t.TempDir()})
		switch {
		case want == "" && err != nil:
			t.Errorf("%s: %v", sc, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n")):
			t.Errorf("%s: %v, want one line saying %q", sc, err, want)
		}
	}
}

// The mesh end to end on iptables: opened by the lab target and proved
// (the check line), TCP_RR and HTTP through it on pod-to-pod and
// pod-to-service across nodes and pod-to-pod on one node, the proxies'
// CPU in every sample, the same-node ClusterIP skipped with the reason;
// closed and the lab taken down, nothing of either is left.
func TestAmbientEndToEnd(t *testing.T) {
	run := runScenario(t, "iptables+ambient", "TCP_RR", "HTTP_RPS_C64")
	line := checkLine(t, run, "ambient")
	if !strings.Contains(line, "TLS handshake (0x16 0x03), the payload never in clear") || !strings.Contains(line, "/ 200 via ztunnel-node0 → ztunnel-node1 (mTLS)") {
		t.Errorf("ambient check %q, want the proof, pod and Service", line)
	}
	checkSamples(t, run, 2, 6)
}

// The waypoint on the mesh: proved on every HTTP address the run dials
// (200 through it, 403 from it), HTTP measured through it with its CPU
// beside the node proxies', and nothing left.
func TestWaypointEndToEnd(t *testing.T) {
	run := runScenario(t, "iptables+ambient+waypoint", "HTTP_RPS_C64")
	line := checkLine(t, run, "waypoint")
	for _, want := range []string{"waypoint on node1, rules allow GET /, else 403", "198.18.128.1:8080: GET / 200 through the waypoint; GET /cnb-l7-denied 403 from it", "198.19.0.11:8080: GET / 200"} {
		if !strings.Contains(line, want) {
			t.Errorf("waypoint check %q lacks %q", line, want)
		}
	}
	checkSamples(t, run, 3, 3)
}

// runScenario opens the scenario on a fresh 2×2 lab through the lab
// target, runs tests for one short round on the four pod placements,
// closes it (the lab goes down) and checks nothing of the mesh or the
// lab is left; it returns the results.
func runScenario(t *testing.T, scenario string, tests ...string) *results.Run {
	t.Helper()
	labtest.NeedRoot(t)
	name, err := results.ParseScenarioName(scenario)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := labtarget.ScenarioConfig(name, lab.Config{Nodes: 2, PodsPerNode: 2, StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	sc.Lab.Name = fmt.Sprintf("amb%06d", rand.IntN(1000000))
	placements := []string{suite.PodToPodOtherNode, suite.PodToServiceOtherNode, suite.PodToPodSameNode, suite.PodToServiceSameNode}
	cfg := labtarget.Config{Lab: sc.Lab, Parts: sc.Parts, Placements: placements, RunID: "amb", Executable: cnibench(t)}
	tgt, err := labtarget.Open(context.Background(), cfg)
	labtest.SkipIfUnsupported(t, err)
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			_ = tgt.Close()
		}
	}()
	// A warm-up: 64 connections through the mesh open their TLS first,
	// on a machine that may be busy.
	plan, err := suite.Options{Tests: tests, Placements: placements, Rounds: 1, Duration: 500 * time.Millisecond, Warmup: 500 * time.Millisecond}.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	r := &suite.Runner{Scenarios: []suite.Scenario{{Name: name.String(), Parts: name, Target: tgt}}, Plan: plan, OutDir: out, RunID: "amb"}
	if _, err := r.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	stateDir := filepath.Join(sc.Lab.StateDir, sc.Lab.Name)
	prefix := "cnb-" + sc.Lab.Name + "-"
	if pids := haproxy.OwnPids(filepath.Join(stateDir, prefix+"amb-")); len(pids) < 2 {
		t.Errorf("%d proxies running during the run, want the node proxies and any waypoint", len(pids))
	}
	closed = true
	if err := tgt.Close(); err != nil {
		t.Fatal(err)
	}
	if pids := haproxy.OwnPids(filepath.Join(stateDir, prefix+"amb-")); len(pids) != 0 {
		t.Errorf("proxies left after close: %v", pids)
	}
	if left, _ := filepath.Glob(filepath.Join(stateDir, prefix+"amb*")); len(left) != 0 {
		t.Errorf("files left: %v", left)
	}
	if named, err := netnsx.ListNamed(prefix); err != nil || len(named) != 0 {
		t.Errorf("namespaces left: %v %v", named, err)
	}
	run, err := results.Load(filepath.Join(out, results.FileName))
	if err != nil {
		t.Fatal(err)
	}
	return run
}

// checkLine is the check of part in the run's only scenario.
func checkLine(t *testing.T, run *results.Run, part string) string {
	t.Helper()
	for _, c := range run.Scenarios[0].Checks {
		if c.Part == part {
			t.Log(c.Label + ": " + c.Text)
			return c.Text
		}
	}
	t.Errorf("no %s check in %+v", part, run.Scenarios[0].Checks)
	return ""
}

// checkSamples: every sample measured with the proxies' CPU (components
// of them each), want results measured, the same-node ClusterIP skipped
// with the mesh's reason.
func checkSamples(t *testing.T, run *results.Run, components, want int) {
	t.Helper()
	measured := map[string]bool{}
	for _, res := range run.Results {
		if res.Placement.Name() == suite.PodToServiceSameNode {
			if res.Skipped == "" || !strings.Contains(res.Skipped, "ambient") {
				t.Errorf("%s %s: want skipped by the mesh, got skipped %q with %d samples", res.Test, res.Placement.Name(), res.Skipped, len(res.Samples))
			}
			continue
		}
		for _, smp := range res.Samples {
			u := smp.DatapathUsage
			switch {
			case smp.Error != "":
				t.Errorf("%s %s: %s", res.Test, res.Placement.Name(), smp.Error)
			case u == nil || u.CPUSec <= 0 || len(u.Components) != components:
				t.Errorf("%s %s: want the CPU of %d proxies in %+v", res.Test, res.Placement.Name(), components, u)
			default:
				measured[res.Test+" "+res.Placement.Name()] = true
			}
		}
	}
	if len(measured) != want {
		t.Errorf("measured %v, want %d", measured, want)
	}
}

// cnibench builds the binary the target starts as agents.
func cnibench(t *testing.T) string {
	bin := filepath.Join(t.TempDir(), "cnibench")
	cmd := exec.Command("go", "build", "-o", bin, "../../../../cmd/cnibench")
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("build cnibench: %v", err)
	}
	return bin
}
