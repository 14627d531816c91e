package k8starget

import (
	"context"
	"errors"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cnibench/cnibench/suite"
	"github.com/cnibench/cnibench/suite/nodecpu"
)

// Two pairs of every placement: node0 runs the four client and same-node
// server pods, node1 two servers; each pod-to-service pair has a Service of
// its own in front of its server; clients are node0's even pods and its
// host; the agents of a node ask together the CPU one pair's do.
func TestPairsLayout(t *testing.T) {
	cfg := Config{Placements: KnownPlacements(), RunID: "r1", Pairs: 2}
	l, err := OfflineLayout(cfg, "token")
	if err != nil {
		t.Fatal(err)
	}
	wantEps := []string{"node0-pod0", "node0-pod1", "node0-pod2", "node0-pod3", "node1-pod0", "node1-pod1", "node0", "node1"}
	wantSvcs := []string{"node0-pod1", "node0-pod3", "node1-pod0", "node1-pod1"}
	if !slices.Equal(l.Endpoints, wantEps) || !slices.Equal(l.Services, wantSvcs) {
		t.Fatalf("endpoints %v services %v, want %v %v", l.Endpoints, l.Services, wantEps, wantSvcs)
	}
	m, err := Build(l)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range m.Pods {
		ep := p.Labels[LabelEndpoint]
		spec, _ := lookupEndpoint(ep)
		wantRole := map[bool]string{true: "client", false: "server"}[ep == "node0" || ep == "node0-pod0" || ep == "node0-pod2"]
		if p.Labels[LabelRole] != wantRole || p.Spec.HostNetwork != spec.Host {
			t.Errorf("pod %s: role %s host %v", ep, p.Labels[LabelRole], p.Spec.HostNetwork)
		}
		if cpu := p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]; cpu.String() != "250m" {
			t.Errorf("pod %s requests %s CPU, want 250m (500m over 2 pairs)", ep, cpu.String())
		}
	}
	one, err := OfflineLayout(Config{Placements: KnownPlacements(), RunID: "r1"}, "token")
	if err != nil || !slices.Equal(one.Endpoints, []string{"node0-pod0", "node0-pod1", "node1-pod0", "node0", "node1"}) || one.Resources.CPURequest != "500m" {
		t.Errorf("one pair: %v %+v %v", one.Endpoints, one.Resources, err)
	}
}

// Pair k of a placement on the cluster: suite.PairEndpoints with the
// pod-to-service pair's own server (its Service's backend).
func TestPairEndpointsOnCluster(t *testing.T) {
	for _, c := range []struct {
		placement string
		k         int
		want      [2]string
	}{
		{PodToServiceSameNode, 0, [2]string{"node0-pod0", "node0-pod1"}},
		{PodToServiceSameNode, 1, [2]string{"node0-pod2", "node0-pod3"}},
		{PodToServiceOtherNode, 2, [2]string{"node0-pod4", "node1-pod2"}},
		{suite.PodToPodOtherNode, 1, [2]string{"node0-pod2", "node1-pod1"}},
	} {
		if got, err := pairEndpoints(c.placement, c.k); err != nil || got != c.want {
			t.Errorf("%s pair %d: %v %v, want %v", c.placement, c.k, got, err, c.want)
		}
	}
	for name, want := range map[string]bool{"node0-pod31": true, "node0-pod32": false, "node2-pod0": false, "node1": true, "node0-pod01": false, "node1-pod": false} {
		if _, ok := lookupEndpoint(name); ok != want {
			t.Errorf("lookupEndpoint(%q) = %v, want %v", name, ok, want)
		}
	}
}

// What a pair of a cluster run cannot serve is refused with why.
func TestPairsRefused(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Placements: KnownPlacements(), RunID: "r", Pairs: 17}, "--pairs must be 1 to 16, got 17"},
		{Config{Placements: KnownPlacements(), RunID: "r", Pairs: 2, NetworkPolicyCheck: true}, "--pairs 2: --network-policy-check allows pair 0's client (node0-pod0) alone; run it without --pairs"},
	} {
		if err := c.cfg.Validate(); err == nil || err.Error() != c.want {
			t.Errorf("%+v: %v, want %q", c.cfg, err, c.want)
		}
	}
}

// Open with two pairs on the fake cluster: eight agents and four Services;
// pair 1 of each placement on its own pods, a pod-to-service pair through
// its own Service's ClusterIP; host-to-host has no pair 1; a pair beyond
// the run's is an error; Close removes everything.
func TestLifecyclePairs(t *testing.T) {
	cs := twoNodeCluster()
	startKubelet(t, cs, testNS, healthy)
	h := startHealthAgent(t, cs, testNS)
	cfg := testConfig("r2")
	cfg.Pairs = 2
	tgt, err := Open(context.Background(), cfg, cs, &staticAccess{addr: h.srv.URL}, "test-ctx")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	pods, _ := cs.CoreV1().Pods(testNS).List(ctx, metav1.ListOptions{LabelSelector: RunSelector("r2")})
	svcs, _ := cs.CoreV1().Services(testNS).List(ctx, metav1.ListOptions{LabelSelector: RunSelector("r2")})
	if len(pods.Items) != 8 || len(svcs.Items) != 4 {
		t.Fatalf("created %d pods and %d services, want 8 and 4", len(pods.Items), len(svcs.Items))
	}
	for name, want := range map[string][3]string{
		suite.PodToPodSameNode:  {"node0-pod2", "node0-pod3", "10.244.1.21"},
		suite.PodToPodOtherNode: {"node0-pod2", "node1-pod1", "10.244.2.20"},
	} {
		pl, err := tgt.PairPlacement(name, 1)
		if err != nil || pl.Client != want[0] || pl.Server != want[1] || pl.ServerAddr != want[2] {
			t.Errorf("%s pair 1 = %+v %v, want %v", name, pl, err, want)
		}
	}
	for _, name := range []string{PodToServiceSameNode, PodToServiceOtherNode} {
		p0, err0 := tgt.Placement(name)
		p1, err1 := tgt.PairPlacement(name, 1)
		svc, _ := cs.CoreV1().Services(testNS).Get(ctx, ServiceName(p1.Server), metav1.GetOptions{})
		if err0 != nil || err1 != nil || p1.Client != "node0-pod2" || p1.ServerAddr != svc.Spec.ClusterIP || p1.ServerAddr == p0.ServerAddr {
			t.Errorf("%s: pair 0 %+v (%v), pair 1 %+v (%v), want pair 1 through the ClusterIP %s of %s", name, p0, err0, p1, err1, svc.Spec.ClusterIP, svc.Name)
		}
	}
	if _, err := tgt.PairPlacement(suite.HostToHostOtherNod, 1); !errors.Is(err, suite.ErrUnsupported) {
		t.Errorf("host-to-host pair 1: %v", err)
	}
	if _, err := tgt.PairPlacement(suite.PodToPodSameNode, 2); err == nil {
		t.Error("pair 2 of a run of 2 pairs")
	}
	checkAccountNodes(t, tgt)
	if err := tgt.Close(); err != nil {
		t.Fatal(err)
	}
	assertClean(t, cs)
}

// checkAccountNodes: both nodes, each read through an agent on it, named
// by their kernel; two readings a window apart give each node's CPU.
func checkAccountNodes(t *testing.T, tgt *Target) {
	t.Helper()
	nodes, err := tgt.AccountNodes()
	if err != nil || len(nodes) != 2 || nodes[0].Name != "node0" || nodes[1].Name != "node1" || nodes[0].Kernel != "fake-boot-id" {
		t.Fatalf("nodes %+v: %v", nodes, err)
	}
	before, err := nodecpu.Read(nodes)
	if err != nil {
		t.Fatal(err)
	}
	after, _ := nodecpu.Read(nodes)
	n := nodecpu.Since(nodes, before, after)
	if e := n.Nodes[1]; e.CPUs != "all" || e.Kernel != "fake-boot-id" || e.UserSec != 2 { // two readings of two nodes between
		t.Errorf("node1 %+v", e)
	}
	if tot := n.CPUTotal(); tot.UserSec != 2 {
		t.Errorf("total %+v: one kernel counts once", tot)
	}
}
