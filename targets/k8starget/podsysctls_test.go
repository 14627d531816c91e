package k8starget

import (
	"bytes"
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stesting "k8s.io/client-go/testing"

	"github.com/cnibench/cnibench/suite"
)

// sysctlsOf is a pod's sysctls as a map.
func sysctlsOf(p *corev1.Pod) map[string]string { return podSysctls(p) }

// Agent pods with their own network namespace ask for the lab's port
// range and tcp_tw_reuse; hostNetwork pods ask for nothing (the kubelet
// refuses net.* sysctls there); --pod-sysctls=false leaves every pod at
// the kernel's defaults.
func TestAgentPodSysctls(t *testing.T) {
	for _, off := range []bool{false, true} {
		cfg := Config{Namespace: "cnibench", Image: "x:y", RunID: "r", ClientNode: "a", ServerNode: "b", Placements: allPlacements, NoPodSysctls: off}
		_, m := dryRunYAML(t, cfg)
		for _, p := range m.Pods {
			got := sysctlsOf(p)
			switch {
			case p.Spec.HostNetwork || off:
				if got != nil {
					t.Errorf("%s (hostNetwork %v, off %v): sysctls %v, want none", p.Name, p.Spec.HostNetwork, off, got)
				}
			case got[SysctlPortRange] != "1024 65535" || got[SysctlTWReuse] != "1" || len(got) != 2:
				t.Errorf("%s: sysctls %v, want the lab's port range and tcp_tw_reuse", p.Name, got)
			}
		}
	}
	if safeSysctls[SysctlTWReuse] || !safeSysctls[SysctlPortRange] {
		t.Error("tcp_tw_reuse is not in the kubelet's safe set, ip_local_port_range is")
	}
}

// refuseTWReuseOn is a kubelet on node that lacks
// --allowed-unsafe-sysctls=net.ipv4.tcp_tw_reuse (counting its refusals);
// every other pod is healthy.
func refuseTWReuseOn(node string, refused *atomic.Int32) func(*corev1.Pod) *corev1.PodStatus {
	return func(p *corev1.Pod) *corev1.PodStatus {
		if affinityNode(p) == node && sysctlsOf(p)[SysctlTWReuse] != "" {
			refused.Add(1)
			return &corev1.PodStatus{Phase: corev1.PodFailed, Reason: SysctlForbiddenReason,
				Message: `Pod was rejected: forbidden sysctl: "net.ipv4.tcp_tw_reuse" not allowlisted`}
		}
		return healthy(p)
	}
}

// A kubelet without --allowed-unsafe-sysctls=net.ipv4.tcp_tw_reuse refuses
// the pod (SysctlForbidden, phase Failed): the pod is created again
// without it, the run goes on, and the drop is in the provenance, the
// notes (with the kubelet flag) and the progress, never silent.
func TestSysctlForbiddenRecreatesPod(t *testing.T) {
	cs := twoNodeCluster()
	var refused atomic.Int32
	startKubelet(t, cs, testNS, refuseTWReuseOn("worker-b", &refused))
	h := startHealthAgent(t, cs, testNS)
	cfg := testConfig("s1")
	var progress bytes.Buffer
	cfg.Progress = &syncWriter{w: &progress}
	tgt, err := Open(context.Background(), cfg, cs, &staticAccess{addr: h.srv.URL}, "")
	if err != nil {
		t.Fatal(err)
	}
	if refused.Load() != 1 {
		t.Errorf("%d pods refused, want node1-pod0's once", refused.Load())
	}
	p, err := cs.CoreV1().Pods(testNS).Get(context.Background(), PodName("node1-pod0"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := sysctlsOf(p); got[SysctlTWReuse] != "" || got[SysctlPortRange] != "1024 65535" {
		t.Errorf("recreated pod's sysctls %v: want the port range without tcp_tw_reuse", got)
	}
	prov := tgt.prov
	if len(prov.SysctlDrops) != 1 || prov.SysctlDrops[0].Endpoint != "node1-pod0" || prov.SysctlDrops[0].Node != "worker-b" ||
		strings.Join(prov.SysctlDrops[0].Sysctls, ",") != SysctlTWReuse || !strings.Contains(prov.SysctlDrops[0].Reason, "SysctlForbidden") {
		t.Errorf("drops %+v", prov.SysctlDrops)
	}
	if got := prov.Endpoints["node0-pod0"].PodSysctls; got[SysctlTWReuse] != "1" {
		t.Errorf("node0-pod0 (allowed) pod sysctls %v", got)
	}
	if got := prov.Endpoints["node1-pod0"].PodSysctls; got[SysctlTWReuse] != "" {
		t.Errorf("node1-pod0 pod sysctls %v", got)
	}
	notes := strings.Join(tgt.Notes(), "\n")
	for _, want := range []string{"cnibench-node1-pod0 on node worker-b runs without net.ipv4.tcp_tw_reuse", "--allowed-unsafe-sysctls=net.ipv4.tcp_tw_reuse"} {
		if !strings.Contains(notes, want) || !strings.Contains(progress.String(), want) {
			t.Errorf("notes %q / progress %q lack %q", notes, progress.String(), want)
		}
	}
	if _, ok := any(tgt).(suite.Noter); !ok {
		t.Error("the target's notes do not reach the results")
	}
	// The effective values each agent read are recorded per endpoint.
	d := tgt.Details()
	eps := d["endpoint_sysctls"].(map[string]any)
	if len(eps) != 5 || eps["node0-pod0"].(map[string]any)["values"].(map[string]any)[SysctlPortRange] != "1024 65535" {
		t.Errorf("endpoint sysctls %v", eps)
	}
	// The client pod's port range sizes the sweep's conntrack preflight.
	if n, err := tgt.EphemeralPorts(); err != nil || n != 64512 {
		t.Errorf("ephemeral ports %d, %v: want 1024-65535 = 64512", n, err)
	}
	if err := tgt.Close(); err != nil {
		t.Fatal(err)
	}
	assertClean(t, cs)
}

// A namespace whose Pod Security level (baseline, restricted) forbids
// unsafe sysctls refuses the pods at create: they are created without
// them, recorded the same way.
func TestPodSecurityRefusesUnsafeSysctl(t *testing.T) {
	cs := twoNodeCluster()
	cs.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		p := a.(k8stesting.CreateAction).GetObject().(*corev1.Pod)
		if len(unsafeSysctls(p)) > 0 {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, p.Name,
				errorString(`violates PodSecurity "baseline:latest": forbidden sysctls (net.ipv4.tcp_tw_reuse)`))
		}
		return false, nil, nil
	})
	startKubelet(t, cs, testNS, healthy)
	h := startHealthAgent(t, cs, testNS)
	cfg := testConfig("s2")
	cfg.Placements = []string{suite.PodToPodOtherNode}
	tgt, err := Open(context.Background(), cfg, cs, &staticAccess{addr: h.srv.URL}, "")
	if err != nil {
		t.Fatal(err)
	}
	defer tgt.Close()
	if len(tgt.prov.SysctlDrops) != 2 || !strings.Contains(tgt.prov.SysctlDrops[0].Reason, "forbidden sysctls") {
		t.Errorf("drops %+v, want both pods, refused by admission", tgt.prov.SysctlDrops)
	}
	for _, ep := range []string{"node0-pod0", "node1-pod0"} {
		if got := tgt.prov.Endpoints[ep].PodSysctls; got[SysctlPortRange] == "" || got[SysctlTWReuse] != "" {
			t.Errorf("%s: pod sysctls %v", ep, got)
		}
	}
}

type errorString string

func (e errorString) Error() string { return string(e) }

// CreateContainerConfigError ("failed to sync secret cache" while the
// node authorizer has not linked the pod's Secret to its node yet) is
// transient on a fresh cluster: the kubelet retries, and so does the run.
// It fails only when the agent timeout passes, naming the last reason.
func TestCreateContainerConfigErrorIsRetried(t *testing.T) {
	configErr := &corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{Name: ContainerNm,
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CreateContainerConfigError",
			Message: `failed to sync secret cache: timed out waiting for the condition`}}}}}
	behave := func(p *corev1.Pod) *corev1.PodStatus {
		if p.Labels[LabelEndpoint] == "node1-pod0" {
			return configErr
		}
		return healthy(p)
	}
	// Recovers: the kubelet's retry succeeds 300 ms later.
	cs := twoNodeCluster()
	startKubelet(t, cs, testNS, behave)
	h := startHealthAgent(t, cs, testNS)
	go func() {
		time.Sleep(300 * time.Millisecond)
		for {
			p, err := cs.Tracker().Get(podsGVR, testNS, PodName("node1-pod0"))
			if err == nil && p.(*corev1.Pod).Status.ContainerStatuses != nil {
				q := p.(*corev1.Pod).DeepCopy()
				q.Status = *healthy(q)
				_ = cs.Tracker().Update(podsGVR, q, testNS)
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	cfg := testConfig("s3")
	cfg.Placements = []string{suite.PodToPodOtherNode}
	tgt, err := Open(context.Background(), cfg, cs, &staticAccess{addr: h.srv.URL}, "")
	if err != nil {
		t.Fatalf("a transient CreateContainerConfigError failed the run: %v", err)
	}
	tgt.Close()
	// Never recovers: the timeout's error names it.
	cfg = testConfig("s4")
	cfg.Placements = []string{suite.PodToPodOtherNode}
	cfg.Timeout = time.Second
	err, took := openFails(t, cfg, behave)
	if !strings.Contains(err.Error(), "agents not ready after 1s") || !strings.Contains(err.Error(), "CreateContainerConfigError: failed to sync secret cache") {
		t.Errorf("error %q lacks the timeout or the last reason", err)
	}
	if took < time.Second {
		t.Errorf("failed after %s, before the timeout", took)
	}
}
