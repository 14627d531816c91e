package k8starget

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes/fake"

	"github.com/cnibench/cnibench/suite"
)

// reachCluster is a healthy two-node cluster with the agents' fake.
func reachCluster(t *testing.T) (*fake.Clientset, *healthAgent) {
	cs := twoNodeCluster()
	startKubelet(t, cs, testNS, healthy)
	return cs, startHealthAgent(t, cs, testNS)
}

// openReach opens a run of placements on reachCluster's cluster, closed
// at the end of the test.
func openReach(t *testing.T, cs *fake.Clientset, h *healthAgent, runID string, placements ...string) *Target {
	t.Helper()
	cfg := testConfig(runID)
	cfg.Placements = placements
	tgt, err := Open(context.Background(), cfg, cs, &staticAccess{addr: h.srv.URL}, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tgt.Close() })
	return tgt
}

// Open does not return before every client that measures through a
// Service got through it: a Service proxy that has not programmed the new
// Service yet (refused connections) is waited for, not measured.
func TestOpenWaitsUntilServicesReachable(t *testing.T) {
	cs, h := reachCluster(t)
	h.refuseRuns(3)
	tgt := openReach(t, cs, h, "reach1", suite.PodToPodSameNode, PodToServiceSameNode, PodToServiceOtherNode)
	// 3 refused, then one success for each of the two Services.
	if got := h.Runs(); got != 5 {
		t.Errorf("%d reachability runs, want 3 refused + 1 per Service = 5", got)
	}
	if got := len(tgt.serviceRoutes()); got != 2 {
		t.Errorf("%d routes through a Service, want 2 (same-node and other-node)", got)
	}
}

// Without a Service placement nothing is checked.
func TestOpenNoServiceNoReachabilityRuns(t *testing.T) {
	cs, h := reachCluster(t)
	openReach(t, cs, h, "reach2", suite.PodToPodSameNode, suite.PodToPodOtherNode)
	if got := h.Runs(); got != 0 {
		t.Errorf("%d reachability runs without a Service placement, want 0", got)
	}
}

// A Service that never forwards fails Open within the timeout with one
// line naming the Service, the client's node and the last error, and
// leaves the cluster clean.
func TestOpenServiceNeverReachable(t *testing.T) {
	cfg := testConfig("reach3")
	cfg.Timeout = time.Second
	cfg.Placements = []string{PodToServiceOtherNode}
	cs, h := reachCluster(t)
	h.refuseRuns(1 << 30)
	_, err := Open(context.Background(), cfg, cs, &staticAccess{addr: h.srv.URL}, "")
	if err == nil {
		t.Fatal("Open succeeded through a Service that refuses every connection")
	}
	for _, want := range []string{"cnibench-node1-pod0", "not reachable from node0-pod0 on node worker-", "within 1s", "ECONNREFUSED"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "\n") {
		t.Errorf("error is not one line: %q", err)
	}
	assertClean(t, cs)
}
