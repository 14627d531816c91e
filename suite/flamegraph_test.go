package suite

import (
	"context"
	"strings"
	"testing"
	"time"
)

// --flame-graph names a test of the run in any case; on a target whose
// agents are not on this machine's pinned CPUs, each of its results says
// why it has no graph, and the measured samples are untouched: the
// profiled sample is never one of them.
func TestFlameGraphNeedsPinnedLabCPUs(t *testing.T) {
	c := startAgent(t)
	var calls []string
	plan, err := Options{Tests: []string{"TCP_RR", "UDP_RR"}, Placements: []string{"pod-to-pod/same-node"}, Rounds: 1,
		Duration: 150 * time.Millisecond, FlameGraph: "tcp_rr"}.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	if plan.FlameGraph != "TCP_RR" {
		t.Fatalf("flame graph of %q", plan.FlameGraph)
	}
	plan.Warmup = 0
	r := &Runner{Scenarios: []Scenario{{Name: "a", Target: loopTarget{c, &calls, "a"}}}, Plan: plan, OutDir: t.TempDir(), RunID: "test"}
	run, err := r.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, res := range run.Results {
		fg := res.FlameGraph
		switch {
		case len(res.Samples) != 1:
			t.Errorf("%s: %d samples, want the 1 measured", res.Test, len(res.Samples))
		case res.Test == "TCP_RR" && (fg == nil || !strings.Contains(fg.Error, "only the lab target")):
			t.Errorf("TCP_RR: flame graph %+v, want the reason there is none", fg)
		case res.Test != "TCP_RR" && fg != nil:
			t.Errorf("%s has a flame graph", res.Test)
		}
	}
	if len(calls) != 2 {
		t.Errorf("%d samples taken, want 2 (no profiled sample without CPUs to sample)", len(calls))
	}
	if got := fileName("ebpf+gro-on", "TCP_RR", "pod-to-pod/other-node"); got != "ebpf-gro-on_TCP_RR_pod-to-pod-other-node" {
		t.Errorf("file name %q", got)
	}
}
