package suite

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cnibench/cnibench/results"
	"github.com/cnibench/cnibench/suite/nodecpu"
)

// nodeTarget is a loopTarget that accounts two nodes, unpinned, each with
// one cgroup dir holding a cpu.stat; calls counts AccountNodes.
type nodeTarget struct {
	loopTarget
	cgroups string
	calls   *int
}

func (t nodeTarget) AccountNodes() ([]nodecpu.Node, error) {
	*t.calls++
	return []nodecpu.Node{{Name: "node0", Cgroups: []string{filepath.Join(t.cgroups, "node0")}},
		{Name: "node1", Cgroups: []string{filepath.Join(t.cgroups, "node1-pod0")}}}, nil
}

func fakeCgroups(t *testing.T) string {
	dir := t.TempDir()
	for _, cg := range []string{"node0", "node1-pod0"} {
		if err := os.MkdirAll(filepath.Join(dir, cg), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, cg, "cpu.stat"), []byte("usage_usec 1000\nuser_usec 600\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// A target that accounts its nodes gets every sample's node readings and,
// once per scenario before its first sample, the nodes idle; a target
// that does not gets neither, and both survive results.json.
func TestRunnerRecordsNodes(t *testing.T) {
	c := startAgent(t)
	var calls []string
	accounted := 0
	plan, err := Options{Tests: []string{"TCP_RR"}, Placements: []string{"pod-to-pod/same-node"}, Rounds: 2, Duration: 150 * time.Millisecond}.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	plan.Warmup = 0
	out := t.TempDir()
	r := &Runner{Scenarios: []Scenario{
		{Name: "a", Target: nodeTarget{loopTarget{c, &calls, "a"}, fakeCgroups(t), &accounted}},
		{Name: "b", Target: loopTarget{c, &calls, "b"}},
	}, Plan: plan, OutDir: out, RunID: "test"}
	if _, err := r.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	disk, err := results.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	if accounted != 3 {
		t.Errorf("AccountNodes called %d times, want 3 (idle once, one per sample)", accounted)
	}
	idle := disk.Scenarios[0].IdleNodes
	if idle == nil || idle.Pinned || idle.Seconds < 1.4 || len(idle.Nodes) != 3 || disk.Scenarios[1].IdleNodes != nil {
		t.Fatalf("idle %+v; b's %+v", idle, disk.Scenarios[1].IdleNodes)
	}
	for _, res := range disk.Results {
		for _, s := range res.Samples {
			if res.Scenario == "b" {
				if s.Nodes != nil {
					t.Errorf("b's sample has nodes %+v", s.Nodes)
				}
				continue
			}
			if s.Nodes == nil || len(s.Nodes.Nodes) != 3 || s.Nodes.Seconds <= 0 {
				t.Fatalf("a's sample nodes %+v", s.Nodes)
			}
			if all, ok := s.Nodes.Node("all"); !ok || all.CPUs != "all" || s.Nodes.Nodes[1].Cgroups[0] != "node1-pod0" {
				t.Errorf("a's sample nodes %+v", s.Nodes)
			}
		}
	}
}
