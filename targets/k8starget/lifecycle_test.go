package k8starget

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/cnibench/cnibench/suite"
)

const testNS = "cnb-bench"

var allPlacements = []string{suite.PodToPodSameNode, suite.PodToPodOtherNode, suite.HostToHostOtherNod, PodToServiceSameNode, PodToServiceOtherNode}

func testConfig(runID string) Config {
	return Config{Namespace: testNS, Image: "registry.example/cnibench:test", RunID: runID,
		Placements: allPlacements, Timeout: 5 * time.Second}
}

// twoNodeCluster is a Cilium cluster with two usable workers and a
// tainted control-plane node.
func twoNodeCluster(extra ...runtime.Object) *fake.Clientset {
	objs := []runtime.Object{
		testNode("cp-0", func(n *corev1.Node) {
			n.Spec.Taints = []corev1.Taint{{Key: "node-role.kubernetes.io/control-plane", Effect: corev1.TaintEffectNoSchedule}}
		}),
		testNode("worker-b"), testNode("worker-a"),
	}
	objs = append(objs, ciliumObjects("cp-0", "worker-a", "worker-b")...)
	return newFakeCluster(append(objs, extra...)...)
}

// healthy gives pods IPs: 10.244.<node>.<n> for pods, the node IP for host
// network pods.
func healthy(p *corev1.Pod) *corev1.PodStatus {
	node := affinityNode(p)
	if p.Spec.HostNetwork {
		return running("10.0.0." + map[string]string{"worker-a": "1", "worker-b": "2"}[node])
	}
	last := map[string]string{"node0-pod0": "10", "node0-pod1": "11", "node1-pod0": "10", NetPolDeniedEndpoint: "12",
		"node0-pod2": "20", "node0-pod3": "21", "node1-pod1": "20"}[p.Labels[LabelEndpoint]]
	return running("10.244." + map[string]string{"worker-a": "1", "worker-b": "2"}[node] + "." + last)
}

// assertClean checks that nothing labelled by cnibench is left in the fake
// cluster, namespace included.
func assertClean(t *testing.T, cs *fake.Clientset) {
	t.Helper()
	left, err := Find(context.Background(), cs, testNS, ManagedSelector())
	if err != nil {
		t.Fatal(err)
	}
	if len(left) > 0 {
		t.Errorf("left behind: %s", Describe(left))
	}
}

// The whole lifecycle: create, wait ready, reach the agents with the run's
// token, map placements to the right addresses, record provenance, and
// remove everything at Close.
func TestLifecycle(t *testing.T) {
	cs := twoNodeCluster()
	startKubelet(t, cs, testNS, healthy)
	h := startHealthAgent(t, cs, testNS)
	acc := &staticAccess{addr: h.srv.URL}
	tgt, err := Open(context.Background(), testConfig("r1"), cs, acc, "test-ctx")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// What was created: our namespace, the Secret, 5 agents, 2 Services.
	pods, _ := cs.CoreV1().Pods(testNS).List(ctx, metav1.ListOptions{LabelSelector: RunSelector("r1")})
	svcs, _ := cs.CoreV1().Services(testNS).List(ctx, metav1.ListOptions{LabelSelector: RunSelector("r1")})
	if len(pods.Items) != 5 || len(svcs.Items) != 2 {
		t.Fatalf("created %d pods and %d services, want 5 and 2", len(pods.Items), len(svcs.Items))
	}
	if h.Calls() != 5 {
		t.Errorf("agent health checks: %d, want one per agent (5)", h.Calls())
	}
	for _, p := range pods.Items {
		node := affinityNode(&p)
		want := map[bool]string{true: "worker-a", false: "worker-b"}[strings.HasPrefix(p.Labels[LabelEndpoint], "node0")]
		if node != want {
			t.Errorf("%s pinned to %s, want %s (sorted usable nodes, tainted cp-0 refused)", p.Name, node, want)
		}
		if r := p.Spec.Containers[0].Resources.Requests; r.Cpu().IsZero() || r.Memory().IsZero() {
			t.Errorf("%s has no requests: it would be BestEffort", p.Name)
		}
	}
	cases := map[string][3]string{
		suite.PodToPodSameNode:   {"node0-pod0", "node0-pod1", "10.244.1.11"},
		suite.PodToPodOtherNode:  {"node0-pod0", "node1-pod0", "10.244.2.10"},
		suite.HostToHostOtherNod: {"node0", "node1", "10.0.0.2"},
	}
	for name, want := range cases {
		pl, err := tgt.Placement(name)
		if err != nil {
			t.Fatal(err)
		}
		if pl.Client != want[0] || pl.Server != want[1] || pl.ServerAddr != want[2] || pl.Name() != name {
			t.Errorf("%s = %+v, want %v", name, pl, want)
		}
	}
	for _, name := range []string{PodToServiceSameNode, PodToServiceOtherNode} {
		pl, err := tgt.Placement(name)
		if err != nil {
			t.Fatal(err)
		}
		svc, _ := cs.CoreV1().Services(testNS).Get(ctx, ServiceName(pl.Server), metav1.GetOptions{})
		if pl.ServerAddr != svc.Spec.ClusterIP || svc.Spec.ClusterIP == "" {
			t.Errorf("%s dials %s, want the ClusterIP of %s (%s)", name, pl.ServerAddr, svc.Name, svc.Spec.ClusterIP)
		}
	}
	if _, err := tgt.Agent("node0-pod0"); err != nil {
		t.Error(err)
	}
	if _, err := tgt.CPUSeconds("node0-pod0"); !errors.Is(err, ErrNoCPUAccounting) {
		t.Errorf("CPUSeconds: %v", err)
	}
	d := tgt.Details()
	if d["kubernetes_version"] != "v1.31.2-eks-7f9249a" || d["context"] != "test-ctx" || d["access"] != acc.Name() {
		t.Errorf("details: %v", d)
	}
	cni := d["cni"].(map[string]any)
	if cni["plugin"] != "cilium" || cni["cilium"].(map[string]any)["routing_mode"] != "native" {
		t.Errorf("cni details: %v", cni)
	}
	if mesh, _ := d["mesh"].(map[string]any); mesh == nil || mesh["summary"] != "no sidecar, ztunnel capture or waypoint in the path; Cilium's L7 proxy: Envoy inside cilium-agent, used by L7 policy only" {
		t.Errorf("mesh: %v", d["mesh"])
	}
	eps := d["endpoints"].(map[string]any)
	if n0 := eps["node0"].(map[string]any); n0["host_network"] != true || n0["node"] != "worker-a" {
		t.Errorf("endpoint node0: %v", n0)
	}
	if tgt.Kind() != "k8s" {
		t.Errorf("kind %q", tgt.Kind())
	}
	if err := tgt.Close(); err != nil {
		t.Fatal(err)
	}
	if !acc.closed {
		t.Error("access not closed")
	}
	assertClean(t, cs)
	if _, err := cs.CoreV1().Namespaces().Get(ctx, testNS, metav1.GetOptions{}); err == nil {
		t.Error("the namespace the run created is still there")
	}
}

// A namespace the user made is used and left alone; only our objects go.
func TestExistingNamespaceKept(t *testing.T) {
	cs := twoNodeCluster(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testNS}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "someone-else", Namespace: testNS}})
	startKubelet(t, cs, testNS, healthy)
	h := startHealthAgent(t, cs, testNS)
	cfg := testConfig("r2")
	cfg.Placements = []string{suite.PodToPodSameNode}
	tgt, err := Open(context.Background(), cfg, cs, &staticAccess{addr: h.srv.URL}, "")
	if err != nil {
		t.Fatal(err)
	}
	if got := tgt.Layout(); got.CreateNamespace || len(got.Endpoints) != 2 || got.Nodes[1] != "" {
		t.Errorf("layout %+v: want the existing namespace, 2 agents on one node", got)
	}
	if err := tgt.Close(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := cs.CoreV1().Namespaces().Get(ctx, testNS, metav1.GetOptions{}); err != nil {
		t.Errorf("user's namespace removed: %v", err)
	}
	if _, err := cs.CoreV1().Pods(testNS).Get(ctx, "someone-else", metav1.GetOptions{}); err != nil {
		t.Errorf("a pod that is not ours was removed: %v", err)
	}
	assertClean(t, cs)
}

// openFails opens with pods behaving as behave and returns the error and
// how long Open took; the cluster must be clean afterwards.
func openFails(t *testing.T, cfg Config, behave func(*corev1.Pod) *corev1.PodStatus) (error, time.Duration) {
	t.Helper()
	cs := twoNodeCluster()
	startKubelet(t, cs, testNS, behave)
	h := startHealthAgent(t, cs, testNS)
	start := time.Now()
	tgt, err := Open(context.Background(), cfg, cs, &staticAccess{addr: h.srv.URL}, "")
	took := time.Since(start)
	if err == nil {
		tgt.Close()
		t.Fatal("Open succeeded")
	}
	if strings.Contains(err.Error(), "\n") {
		t.Errorf("error is not one line: %q", err)
	}
	assertClean(t, cs)
	return err, took
}

func TestUnschedulableTimesOutWithReason(t *testing.T) {
	cfg := testConfig("r3")
	cfg.Timeout = time.Second
	err, took := openFails(t, cfg, func(p *corev1.Pod) *corev1.PodStatus {
		if p.Labels[LabelEndpoint] != "node1-pod0" {
			return healthy(p)
		}
		return &corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{
			Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
			Message: "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) didn't match Pod's node affinity/selector.",
		}}}
	})
	if !strings.Contains(err.Error(), "agents not ready after 1s") || !strings.Contains(err.Error(), "cnibench-node1-pod0: Unschedulable: 0/3 nodes are available: 1 Insufficient cpu") {
		t.Errorf("error %q does not name the pod and the reason", err)
	}
	if strings.Contains(err.Error(), "node0-pod0") {
		t.Errorf("error %q blames a ready pod", err)
	}
	if took > 3*time.Second {
		t.Errorf("took %s with a 1s timeout", took)
	}
}

func TestCrashLoopFailsFast(t *testing.T) {
	cfg := testConfig("r4")
	cfg.Timeout = time.Minute
	err, took := openFails(t, cfg, func(p *corev1.Pod) *corev1.PodStatus {
		if !p.Spec.HostNetwork {
			return healthy(p)
		}
		return &corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{
			Name: ContainerNm, RestartCount: 3,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 40s restarting failed container"}},
			LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: 1, Reason: "Error", Message: "cnibench: listen tcp :5201: bind: address already in use\n"}},
		}}}
	})
	for _, want := range []string{"agent pod failed", "crash-looping (CrashLoopBackOff, 3 restarts)", "last exit code 1 (Error): cnibench: listen tcp :5201: bind: address already in use", "on worker-"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if !errors.Is(err, ErrAgentFailed) {
		t.Errorf("error does not wrap ErrAgentFailed")
	}
	if took > 5*time.Second {
		t.Errorf("a crash took %s to report (timeout 1m): should fail at once", took)
	}
}

func TestImagePullBackOffNamed(t *testing.T) {
	cfg := testConfig("r5")
	cfg.Timeout = time.Second
	cfg.Placements = []string{suite.PodToPodOtherNode}
	err, _ := openFails(t, cfg, func(p *corev1.Pod) *corev1.PodStatus {
		return &corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{Name: ContainerNm,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff",
				Message: `Back-off pulling image "registry.example/cnibench:test"`}}}}}
	})
	if !strings.Contains(err.Error(), `ImagePullBackOff: Back-off pulling image "registry.example/cnibench:test"`) {
		t.Errorf("error %q does not name the image pull", err)
	}
}

func TestWrongImageNameFailsFast(t *testing.T) {
	cfg := testConfig("r5b")
	cfg.Timeout = time.Minute
	cfg.Placements = []string{suite.PodToPodSameNode}
	err, took := openFails(t, cfg, func(p *corev1.Pod) *corev1.PodStatus {
		return &corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{Name: ContainerNm,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "InvalidImageName", Message: `couldn't parse image name "Bad:Image"`}}}}}
	})
	if !strings.Contains(err.Error(), "cannot start: InvalidImageName") || took > 5*time.Second {
		t.Errorf("error %q after %s", err, took)
	}
}

// Leftovers of an earlier run block a new one until cleaned; --force
// cleans them first.
func TestLeftoversRefusedThenForced(t *testing.T) {
	old := baseLabels("old-run", NameAgent)
	cs := twoNodeCluster(
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testNS, Labels: old}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "cnibench-node0-pod0", Namespace: testNS, Labels: old}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "cnibench-node1-pod0", Namespace: testNS, Labels: old}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: SecretName, Namespace: testNS, Labels: old}},
	)
	startKubelet(t, cs, testNS, healthy)
	h := startHealthAgent(t, cs, testNS)
	cfg := testConfig("r6")
	_, err := Open(context.Background(), cfg, cs, &staticAccess{addr: h.srv.URL}, "")
	if err == nil || !strings.Contains(err.Error(), "earlier cnibench run") || !strings.Contains(err.Error(), "old-run") ||
		!strings.Contains(err.Error(), "cnibench k8s cleanup --namespace "+testNS) || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("leftovers not refused clearly: %v", err)
	}
	pods, _ := cs.CoreV1().Pods(testNS).List(context.Background(), metav1.ListOptions{})
	if len(pods.Items) != 1 {
		t.Fatalf("the refused run changed the cluster: %d pods", len(pods.Items))
	}
	cfg.Force = true
	tgt, err := Open(context.Background(), cfg, cs, &staticAccess{addr: h.srv.URL}, "")
	if err != nil {
		t.Fatal(err)
	}
	left, _ := Find(context.Background(), cs, testNS, RunSelector("old-run"))
	if len(left) > 0 {
		t.Errorf("--force left %s", Describe(left))
	}
	if err := tgt.Close(); err != nil {
		t.Fatal(err)
	}
	assertClean(t, cs)
}

// Ctrl-C while agents come up: Open returns promptly and removes what it
// made.
func TestCancelWhileWaitingCleansUp(t *testing.T) {
	cs := twoNodeCluster()
	startKubelet(t, cs, testNS, func(*corev1.Pod) *corev1.PodStatus { return nil }) // never scheduled
	h := startHealthAgent(t, cs, testNS)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		// Cancel once the pods exist, as a user pressing Ctrl-C would.
		for {
			pods, _ := cs.CoreV1().Pods(testNS).List(context.Background(), metav1.ListOptions{})
			if len(pods.Items) > 0 {
				cancel()
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	cfg := testConfig("r7")
	cfg.Timeout = time.Minute
	start := time.Now()
	_, err := Open(ctx, cfg, cs, &staticAccess{addr: h.srv.URL}, "")
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Open after cancel: %v", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("cancel took %s", took)
	}
	assertClean(t, cs)
}

// Cancelled during the run: Close (deferred by the CLI) still removes
// everything although the run's context is gone.
func TestCloseAfterCancel(t *testing.T) {
	cs := twoNodeCluster()
	startKubelet(t, cs, testNS, healthy)
	h := startHealthAgent(t, cs, testNS)
	ctx, cancel := context.WithCancel(context.Background())
	tgt, err := Open(ctx, testConfig("r8"), cs, &staticAccess{addr: h.srv.URL}, "")
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := tgt.Close(); err != nil {
		t.Fatal(err)
	}
	if err := tgt.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	assertClean(t, cs)
}

// One usable node: other-node placements are skipped with the reason, the
// rest runs, and the runner records the skips.
func TestOneNodeSkipsOtherNode(t *testing.T) {
	cs := newFakeCluster(append([]runtime.Object{testNode("solo"),
		testNode("down", func(n *corev1.Node) { n.Status.Conditions[0].Status = corev1.ConditionFalse })},
		ciliumObjects("solo", "down")...)...)
	startKubelet(t, cs, testNS, func(p *corev1.Pod) *corev1.PodStatus { return running("10.244.0.9") })
	h := startHealthAgent(t, cs, testNS)
	tgt, err := Open(context.Background(), testConfig("r9"), cs, &staticAccess{addr: h.srv.URL}, "")
	if err != nil {
		t.Fatal(err)
	}
	defer tgt.Close()
	if l := tgt.Layout(); strings.Join(l.Endpoints, ",") != "node0-pod0,node0-pod1" || strings.Join(l.Services, ",") != "node0-pod1" {
		t.Errorf("layout %+v: want only node0's pods", l)
	}
	for _, name := range []string{suite.PodToPodOtherNode, suite.HostToHostOtherNod, PodToServiceOtherNode} {
		_, err := tgt.Placement(name)
		if !errors.Is(err, suite.ErrUnsupported) || !strings.Contains(err.Error(), "needs two usable nodes") || !strings.Contains(err.Error(), "down: not Ready") {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := tgt.Placement(suite.PodToPodSameNode); err != nil {
		t.Error(err)
	}
	// The run's header counts only what runs, and says what is skipped.
	full, err := suite.Options{Tests: []string{"TCP_RR", "DNS_QPS_MAX"}, Placements: []string{suite.PodToPodSameNode, suite.PodToPodOtherNode},
		Rounds: 2, Duration: 4 * time.Second, Warmup: time.Second}.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	if got := tgt.SampleCount(full); !strings.HasPrefix(got, "2 samples, about 10s of measurement; 6 skipped (pod-to-pod/other-node: needs two usable nodes") ||
		!strings.Contains(got, "DNS_QPS_MAX: DNS_QPS_MAX needs dnsmasq") {
		t.Errorf("header %q: want 2 samples (TCP_RR same-node × 2 rounds), 6 skipped with reasons", got)
	}
	// The runner turns those errors into skipped results, not a failure.
	plan, err := suite.Options{Tests: []string{"TCP_RR"}, Placements: []string{suite.PodToPodOtherNode, suite.HostToHostOtherNod}}.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	run, err := (&suite.Runner{Scenarios: []suite.Scenario{{Name: "k8s", Target: tgt}}, Plan: plan, OutDir: t.TempDir(), RunID: "r9"}).Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if run.Target.Kind != "k8s" || len(run.Results) != 2 {
		t.Fatalf("run: kind %q, %d results", run.Target.Kind, len(run.Results))
	}
	for _, r := range run.Results {
		if !strings.Contains(r.Skipped, "needs two usable nodes") || len(r.Samples) != 0 || r.Placement.Name() == "/" {
			t.Errorf("result %s %s: skipped %q, %d samples", r.Test, r.Placement.Name(), r.Skipped, len(r.Samples))
		}
	}
}

// Agents that pass their readiness probe but reject the token (another
// run's agents, say) are an error, and cleaned up.
func TestWrongTokenRefused(t *testing.T) {
	cs := twoNodeCluster()
	startKubelet(t, cs, testNS, healthy)
	other := newFakeCluster() // its Secret never exists: every token is wrong
	h := startHealthAgent(t, other, testNS)
	cfg := testConfig("r10")
	cfg.Placements = []string{suite.PodToPodSameNode}
	_, err := Open(context.Background(), cfg, cs, &staticAccess{addr: h.srv.URL}, "")
	if err == nil || !strings.Contains(err.Error(), "did not become ready") || !strings.Contains(err.Error(), "bad or missing agent token") {
		t.Fatalf("Open with a token the agents reject: %v", err)
	}
	assertClean(t, cs)
}
