package k8starget

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/cnibench/cnibench/engine"
	"github.com/cnibench/cnibench/suite"
)

// movingIPs is healthy, but a replacement pod gets another IP, as a new
// pod does: 10.244.<node>.<100+n> for cnibench-…-r<n>.
func movingIPs(p *corev1.Pod) *corev1.PodStatus {
	st := healthy(p)
	if _, n, ok := strings.Cut(p.Name, "-r"); ok && !p.Spec.HostNetwork {
		ip := st.PodIP[:strings.LastIndex(st.PodIP, ".")+1]
		st.PodIP = ip + "10" + n
	}
	return st
}

// kill removes a pod as `kubectl delete --grace-period=0 --force` does
// (straight on the tracker: not one of the CLI's calls).
func kill(t *testing.T, cs *fake.Clientset, name string) {
	t.Helper()
	if err := cs.Tracker().Delete(podsGVR, testNS, name); err != nil {
		t.Fatal(err)
	}
}

// setStatus changes a pod's status as its kubelet would.
func setStatus(t *testing.T, cs *fake.Clientset, name string, mut func(*corev1.PodStatus)) {
	t.Helper()
	obj, err := cs.Tracker().Get(podsGVR, testNS, name)
	if err != nil {
		t.Fatal(err)
	}
	p := obj.(*corev1.Pod).DeepCopy()
	mut(&p.Status)
	if err := cs.Tracker().Update(podsGVR, p, testNS); err != nil {
		t.Fatal(err)
	}
}

func waitClosed(t *testing.T, c <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-c:
	case <-time.After(3 * time.Second):
		t.Fatalf("%s: the death watch did not see it", what)
	}
}

func openReplacing(t *testing.T, runID string, behave func(*corev1.Pod) *corev1.PodStatus, mut ...func(*Config)) (*fake.Clientset, *Target, *healthAgent) {
	t.Helper()
	cs := twoNodeCluster()
	startKubelet(t, cs, testNS, behave)
	h := startHealthAgent(t, cs, testNS)
	cfg := testConfig(runID)
	for _, m := range mut {
		m(&cfg)
	}
	tgt, err := Open(context.Background(), cfg, cs, &staticAccess{addr: h.srv.URL}, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := tgt.Close(); err != nil {
			t.Error(err)
		}
		assertClean(t, cs)
	})
	return cs, tgt, h
}

// A server pod deleted mid-run: the death is seen, named, and a new pod
// of the same role on the same node takes its place, its new IP the one
// pod-to-pod dials, its Service forwarding to it again before it counts;
// the provenance says which pod replaced which and why.
func TestReplaceDeletedServer(t *testing.T) {
	cs, tgt, h := openReplacing(t, "rep1", movingIPs)
	ctx := context.Background()
	if died, err := tgt.ReplaceDead(ctx, []string{"node0-pod0", "node1-pod0"}); died != nil || err != nil {
		t.Fatalf("live agents: %v, %v", died, err)
	}
	runs := h.Runs()
	kill(t, cs, "cnibench-node1-pod0")
	waitClosed(t, tgt.AgentDone("node1-pod0"), "deleted server")
	died, err := tgt.ReplaceDead(ctx, []string{"node0-pod0", "node1-pod0"})
	if err != nil || died == nil || died.Error() != "agent pod cnibench-node1-pod0 (node1-pod0 on worker-b) was deleted; pod cnibench-node1-pod0-r1 replaces it" {
		t.Fatalf("ReplaceDead: %v, %v", died, err)
	}
	p, err := cs.CoreV1().Pods(testNS).Get(ctx, "cnibench-node1-pod0-r1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if affinityNode(p) != "worker-b" || p.Labels[LabelEndpoint] != "node1-pod0" || p.Labels[LabelRole] != "server" || p.Labels[LabelRunID] != "rep1" ||
		len(p.Spec.SecurityContext.Sysctls) != 2 {
		t.Errorf("replacement %s: node %s, labels %v, sysctls %v", p.Name, affinityNode(p), p.Labels, p.Spec.SecurityContext.Sysctls)
	}
	if addr, _ := tgt.ServerAddr(suite.PodToPodOtherNode); addr != "10.244.2.101" {
		t.Errorf("pod-to-pod/other-node dials %s, want the new pod's 10.244.2.101", addr)
	}
	if pl, _ := tgt.Placement(PodToServiceOtherNode); pl.ServerAddr != tgt.services["node1-pod0"] {
		t.Errorf("pod-to-service/other-node dials %s, want its ClusterIP %s", pl.ServerAddr, tgt.services["node1-pod0"])
	}
	if h.Runs() <= runs {
		t.Error("the Service in front of the new pod was not checked before the next sample")
	}
	reps := tgt.prov.Replacements
	if len(reps) != 1 || reps[0].OldPod != "cnibench-node1-pod0" || reps[0].NewPod != "cnibench-node1-pod0-r1" || reps[0].Node != "worker-b" ||
		!strings.HasSuffix(reps[0].Cause, "was deleted") || reps[0].ReadyIn == "" || reps[0].Error != "" {
		t.Errorf("replacements %+v", reps)
	}
	if ep := tgt.Details()["endpoints"].(map[string]any)["node1-pod0"].(map[string]any); ep["pod"] != "cnibench-node1-pod0-r1" || ep["ip"] != "10.244.2.101" {
		t.Errorf("endpoint node1-pod0: %v", ep)
	}
	select {
	case <-tgt.AgentDone("node1-pod0"):
		t.Error("the new pod's agent counts as dead")
	default:
	}
	if died, err := tgt.ReplaceDead(ctx, []string{"node0-pod0", "node1-pod0"}); died != nil || err != nil {
		t.Errorf("after the replacement: %v, %v", died, err)
	}
	// Again: the next name.
	kill(t, cs, "cnibench-node1-pod0-r1")
	waitClosed(t, tgt.AgentDone("node1-pod0"), "deleted replacement")
	if died, err := tgt.ReplaceDead(ctx, []string{"node1-pod0"}); err != nil || !strings.HasSuffix(died.Error(), "pod cnibench-node1-pod0-r2 replaces it") {
		t.Errorf("second death: %v, %v", died, err)
	}
}

// A container OOM-killed and restarted in place, and a pod evicted by the
// kubelet (left in the API, Failed): the cause is the API's, and the old
// pod is deleted before the new one comes.
func TestReplaceOOMKilledAndEvicted(t *testing.T) {
	cs, tgt, _ := openReplacing(t, "rep2", movingIPs)
	ctx := context.Background()
	setStatus(t, cs, "cnibench-node0-pod1", func(st *corev1.PodStatus) {
		c := &st.ContainerStatuses[0]
		c.RestartCount = 1
		c.LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "OOMKilled", ExitCode: 137}}
	})
	setStatus(t, cs, "cnibench-node0", func(st *corev1.PodStatus) {
		st.Phase, st.Reason, st.Message = corev1.PodFailed, "Evicted", "The node was low on resource: ephemeral-storage."
	})
	waitClosed(t, tgt.AgentDone("node0-pod1"), "OOM-killed")
	waitClosed(t, tgt.AgentDone("node0"), "evicted")
	died, err := tgt.ReplaceDead(ctx, []string{"node0-pod0", "node0-pod1"})
	want := "agent pod cnibench-node0-pod1 (node0-pod1 on worker-a): container agent terminated: OOMKilled, exit code 137 (SIGKILL); restarted in place, restart count 1; pod cnibench-node0-pod1-r1 replaces it"
	if err != nil || died == nil || died.Error() != want {
		t.Fatalf("OOM: %v, %v\nwant %s", died, err, want)
	}
	died, err = tgt.ReplaceDead(ctx, []string{"node0", "node1"})
	want = "agent pod cnibench-node0 (node0 on worker-a) was evicted by the kubelet: The node was low on resource: ephemeral-storage.; pod cnibench-node0-r1 replaces it"
	if err != nil || died == nil || died.Error() != want {
		t.Fatalf("evicted: %v, %v\nwant %s", died, err, want)
	}
	for _, old := range []string{"cnibench-node0-pod1", "cnibench-node0"} {
		if _, err := cs.CoreV1().Pods(testNS).Get(ctx, old, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("the dead pod %s is still there: %v", old, err)
		}
	}
	// A host-network agent comes back at its node's IP.
	if addr, _ := tgt.ServerAddr(suite.HostToHostOtherNod); addr != "10.0.0.2" {
		t.Errorf("host-to-host dials %s", addr)
	}
}

// A replacement that cannot start (the node is full now) fails with the
// scheduler's reason, once: the endpoint is lost and every later check
// says so at once instead of trying again; the stuck pod goes at Close.
func TestReplacementFailsOnce(t *testing.T) {
	behave := func(p *corev1.Pod) *corev1.PodStatus {
		if strings.HasSuffix(p.Name, "-r1") {
			return &corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled,
				Status: corev1.ConditionFalse, Reason: "Unschedulable", Message: "0/3 nodes are available: 1 Insufficient cpu."}}}
		}
		return healthy(p)
	}
	cs, tgt, _ := openReplacing(t, "rep3", behave, func(c *Config) { c.Timeout = time.Second })
	ctx := context.Background()
	kill(t, cs, "cnibench-node1-pod0")
	waitClosed(t, tgt.AgentDone("node1-pod0"), "deleted server")
	died, err := tgt.ReplaceDead(ctx, []string{"node0-pod0", "node1-pod0"})
	if died == nil || died.Error() != "agent pod cnibench-node1-pod0 (node1-pod0 on worker-b) was deleted" ||
		err == nil || !strings.Contains(err.Error(), "Unschedulable: 0/3 nodes are available: 1 Insufficient cpu.") {
		t.Fatalf("ReplaceDead: %v; %v", died, err)
	}
	start := time.Now()
	died, err = tgt.ReplaceDead(ctx, []string{"node0-pod0", "node1-pod0"})
	if died != nil || err == nil || !strings.HasPrefix(err.Error(), "agent node1-pod0 has no pod: agent pod cnibench-node1-pod0 (node1-pod0 on worker-b) was deleted, and replacing it failed: ") ||
		time.Since(start) > 500*time.Millisecond || strings.Contains(err.Error(), "\n") {
		t.Errorf("later check (%s): %v; %v", time.Since(start), died, err)
	}
	if reps := tgt.prov.Replacements; len(reps) != 1 || reps[0].NewPod != "" || !strings.Contains(reps[0].Error, "Insufficient cpu") {
		t.Errorf("replacements %+v", reps)
	}
}

// Through the runner, as a run meets it: the server pod deleted during
// round 2 fails that sample with the cause naming the pod, rounds 3 and 4
// measure on the new pod at its new address; the client pod deleted
// during a sample ends it at once (not at its deadline) and a new client
// takes the next one.
func TestRunnerReplacesAKilledAgent(t *testing.T) {
	for _, c := range []struct {
		victim, endpoint string
		hang             bool // the run hangs: only the death can end it
	}{
		{"cnibench-node1-pod0", "node1-pod0", false},
		{"cnibench-node0-pod0", "node0-pod0", true},
	} {
		t.Run(c.endpoint, func(t *testing.T) {
			cs := twoNodeCluster()
			startKubelet(t, cs, testNS, movingIPs)
			h := startHealthAgent(t, cs, testNS)
			var mu sync.Mutex
			var hosts []string
			h.runHook = func(ctx context.Context, n int, o engine.Options) error {
				mu.Lock()
				hosts = append(hosts, o.Host)
				mu.Unlock()
				if n != 2 {
					return nil
				}
				kill(t, cs, c.victim)
				if c.hang {
					select {
					case <-ctx.Done():
					case <-time.After(20 * time.Second):
					}
				}
				return errors.New("connection reset by peer")
			}
			cfg := testConfig("rep4")
			cfg.Placements = []string{suite.PodToPodOtherNode}
			tgt, err := Open(context.Background(), cfg, cs, &staticAccess{addr: h.srv.URL}, "")
			if err != nil {
				t.Fatal(err)
			}
			defer tgt.Close()
			plan, err := suite.Options{Tests: []string{"TCP_RR"}, Placements: cfg.Placements, Rounds: 4, Duration: 100 * time.Millisecond}.Resolve()
			if err != nil {
				t.Fatal(err)
			}
			plan.Warmup = 0
			run, err := (&suite.Runner{Scenarios: []suite.Scenario{{Name: "k8s", Target: tgt}}, Plan: plan, OutDir: t.TempDir(), RunID: cfg.RunID}).Run(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if err := tgt.Close(); err != nil {
				t.Fatal(err)
			}
			assertClean(t, cs)
			ss := run.Results[0].Samples
			want := fmt.Sprintf("agent pod %s (%s on worker-%s) was deleted; pod %s-r1 replaces it", c.victim, c.endpoint, map[bool]string{true: "a", false: "b"}[c.hang], c.victim)
			if len(ss) != 4 || ss[0].Error != "" || ss[1].Error != want || ss[2].Error != "" || ss[3].Error != "" {
				t.Fatalf("samples: %+v\nwant round 2 failed with %q", ss, want)
			}
			if took := ss[1].End.Sub(ss[1].Start); took > 5*time.Second {
				t.Errorf("the failed sample took %s", took)
			}
			mu.Lock()
			defer mu.Unlock()
			newIP := map[bool]string{true: "10.244.2.10", false: "10.244.2.101"}[c.hang] // a new client: the server stays
			if len(hosts) != 4 || hosts[0] != "10.244.2.10" || hosts[2] != newIP || hosts[3] != newIP {
				t.Errorf("runs dialled %v, want rounds 3 and 4 at %s", hosts, newIP)
			}
			reps, _ := run.Target.Details["agent_replacements"].([]any)
			if len(reps) != 0 { // the runner's copy is from the start; RecordClose brings the end's
				t.Errorf("replacements in the details before RecordClose: %v", reps)
			}
			tgt.RecordClose(run, "k8s")
			if reps, _ := run.Target.Details["agent_replacements"].([]any); len(reps) != 1 || reps[0].(map[string]any)["new_pod"] != c.victim+"-r1" {
				t.Errorf("replacements after RecordClose: %v", run.Target.Details["agent_replacements"])
			}
		})
	}
}
