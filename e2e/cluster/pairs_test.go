package cluster

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/engine"
	"github.com/cnibench/cnibench/engine/kinds"
	"github.com/cnibench/cnibench/results"
)

// run --target k8s --pairs 2: two client pods of node0 run TCP_RR at once,
// on pod-to-pod/other-node against two server pods of node1 and on
// pod-to-service/same-node each through a Service of its own in front of
// its own server pod of node0. Every pair's measured interval overlaps the
// other's by 95% of its length or more, the sample's result is the sum of
// the pairs', and nothing of the run is left afterwards.
func TestPairsOnCluster(t *testing.T) {
	e := getEnv(t)
	out := filepath.Join(t.TempDir(), "run")
	r := e.cnibench(t, e.kubeconfig, "run", "--target", "k8s", "--image", e.image, "--pairs", "2",
		"--tests", "TCP_RR", "--placements", "pod-to-pod/other-node,pod-to-service/same-node",
		"--rounds", "1", "--duration", "2s", "--warmup", "500ms", "--out", out)
	mustOK(t, r, "run --pairs 2")
	res := readResults(t, out)
	checkSamples(t, res)
	want := map[string][][2]string{
		"pod-to-pod/other-node":    {{"node0-pod0", "node1-pod0"}, {"node0-pod2", "node1-pod1"}},
		"pod-to-service/same-node": {{"node0-pod0", "node0-pod1"}, {"node0-pod2", "node0-pod3"}},
	}
	if res.Plan.Pairs != 2 || len(res.Results) != len(want) {
		t.Fatalf("plan pairs %d, %d results", res.Plan.Pairs, len(res.Results))
	}
	for _, rr := range res.Results {
		name := rr.Placement.Name()
		var eps [][2]string
		var addrs []string
		for _, p := range rr.Pairs {
			eps = append(eps, [2]string{p.Client, p.Server})
			addrs = append(addrs, p.ServerAddr)
		}
		if !slices.Equal(eps, want[name]) || addrs[0] == addrs[1] {
			t.Errorf("%s: pairs %v at %v, want %v at two addresses (a Service each)", name, eps, addrs, want[name])
		}
		for _, s := range rr.Samples {
			checkPairsSample(t, name, s)
			checkClusterNodes(t, name, s.Nodes)
		}
	}
	md, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil || !strings.Contains(string(md), "\n## Pairs\n") || !strings.Contains(string(md), "\n## Queries per core\n") ||
		!strings.Contains(string(md), "node1: its kernel is node0's (one machine), counted once") {
		t.Errorf("report.md has no pairs or queries-per-core section with the nodes' one kernel (%v)", err)
	}
	e.waitGone(t, "cnibench", false)
}

// checkClusterNodes: the sample recorded both nodes' CPU, each read
// through an agent on it; the test cluster's nodes are namespaces of this
// machine, so both name this machine's kernel and kept its cores busy.
func checkClusterNodes(t *testing.T, name string, n *results.NodesCPU) {
	t.Helper()
	id, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	boot := strings.TrimSpace(string(id))
	if n == nil || len(n.Nodes) != 2 || n.Seconds <= 0 {
		t.Errorf("%s: nodes' CPU %+v", name, n)
		return
	}
	for i, e := range n.Nodes {
		if e.Node != fmt.Sprintf("node%d", i) || e.CPUs != "all" || e.Kernel != boot || e.BusySec() <= 0 {
			t.Errorf("%s: node entry %+v, want node%d on all CPUs of this machine's kernel %s, busy", name, e, i, boot)
		}
	}
}

// checkPairsSample: every pair measured, over intervals that overlap by
// 95% or more, and the sample's result is their sum.
func checkPairsSample(t *testing.T, name string, s results.Sample) {
	t.Helper()
	agg, ok := s.Result.(*engine.Result)
	if s.Error != "" || !ok || len(s.Pairs) != 2 {
		t.Errorf("%s: sample %q with %d pairs (%T)", name, s.Error, len(s.Pairs), s.Result)
		return
	}
	var transactions int64
	var rate float64
	for _, p := range s.Pairs {
		pr, ok := p.Result.(*engine.Result)
		if p.Error != "" || !ok || pr.Transactions == 0 {
			t.Errorf("%s pair %d (%s → %s): %q %+v", name, p.Pair, p.Client, p.Server, p.Error, p.Result)
			return
		}
		transactions += pr.Transactions
		rate += pr.RatePerSec
		for _, q := range s.Pairs {
			if o := kinds.Overlap(p.Start, p.End, q.Start, q.End); o < 0.95 {
				t.Errorf("%s: pair %d (%s..%s) overlaps pair %d (%s..%s) by %.1f%% of its interval", name,
					p.Pair, p.Start.Format(time.StampMilli), p.End.Format(time.StampMilli), q.Pair, q.Start.Format(time.StampMilli), q.End.Format(time.StampMilli), 100*o)
			}
		}
	}
	if agg.Transactions != transactions || math.Abs(agg.RatePerSec-rate) > 1e-6*rate {
		t.Errorf("%s: aggregate %d transactions at %.1f/s, the pairs' sum %d at %.1f/s", name, agg.Transactions, agg.RatePerSec, transactions, rate)
	}
}
