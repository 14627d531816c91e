package k8starget

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/version"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/cnibench/cnibench/agent"
	"github.com/cnibench/cnibench/engine"
	"github.com/cnibench/cnibench/engine/httpload"
	"github.com/cnibench/cnibench/internal/procstat"
	"github.com/cnibench/cnibench/results"
)

func init() {
	pollInterval, agentReadyTimeout, deathGrace = 20*time.Millisecond, time.Second, 500*time.Millisecond
}

// testNode is a Ready Linux node with provenance labels.
func testNode(name string, mut ...func(*corev1.Node)) *corev1.Node {
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			"kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
			"node.kubernetes.io/instance-type": "m6i.large", "topology.kubernetes.io/zone": "eu-west-1a",
		}},
		Status: corev1.NodeStatus{
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
			NodeInfo: corev1.NodeSystemInfo{KernelVersion: "6.8.0-1021-aws", OSImage: "Ubuntu 24.04.1 LTS",
				Architecture: "amd64", OperatingSystem: "linux", ContainerRuntimeVersion: "containerd://1.7.22", KubeletVersion: "v1.31.2"},
			Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0." + fmt.Sprint(len(name))}},
		},
	}
	for _, m := range mut {
		m(n)
	}
	return n
}

// ciliumObjects are a Cilium install: DaemonSet, ConfigMap and one Ready
// agent pod per node.
func ciliumObjects(nodes ...string) []runtime.Object {
	sel := map[string]string{"k8s-app": "cilium"}
	objs := []runtime.Object{
		&appsv1.DaemonSet{
			ObjectMeta: metav1.ObjectMeta{Name: "cilium", Namespace: "kube-system"},
			Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: sel},
				Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "cilium-agent", Image: "quay.io/cilium/cilium:v1.16.3@sha256:62d2a09bbef840a46099ac4c69421c90f84f28d018d479749049011329aa7f28"}}}}},
			Status: appsv1.DaemonSetStatus{DesiredNumberScheduled: int32(len(nodes)), NumberReady: int32(len(nodes))},
		},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cilium-config", Namespace: "kube-system"},
			Data: map[string]string{"routing-mode": "native", "kube-proxy-replacement": "true", "bpf-lb-map-max": "512000", "enable-hubble": "true", "ipam": "eni"}},
	}
	for _, n := range nodes {
		objs = append(objs, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "cilium-" + n, Namespace: "kube-system", Labels: sel},
			Spec:       corev1.PodSpec{NodeName: n},
			Status: corev1.PodStatus{Phase: corev1.PodRunning,
				Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
		})
	}
	return objs
}

// newFakeCluster is a fake clientset holding objs, answering version v1.31.2.
func newFakeCluster(objs ...runtime.Object) *fake.Clientset {
	cs := fake.NewClientset(objs...)
	// Refuse what a real API server refuses (validate_test.go).
	cs.PrependReactor("create", "*", validatingReactor)
	cs.PrependReactor("update", "*", validatingReactor)
	// The API server gives a Service its ClusterIP when it is created.
	var mu sync.Mutex
	next := 10
	cs.PrependReactor("create", "services", func(a k8stesting.Action) (bool, runtime.Object, error) {
		s := a.(k8stesting.CreateAction).GetObject().(*corev1.Service)
		mu.Lock()
		defer mu.Unlock()
		if s.Spec.ClusterIP == "" {
			next++
			s.Spec.ClusterIP = fmt.Sprintf("10.96.%d.%d", next/250, next%250)
		}
		return false, nil, nil
	})
	cs.Discovery().(*fakediscovery.FakeDiscovery).FakedServerVersion = &version.Info{GitVersion: "v1.31.2-eks-7f9249a", Platform: "linux/amd64"}
	return cs
}

// kubelet plays scheduler and kubelet for the fake clientset: it gives
// every new pod of ns the status behave returns (nil: leave it alone) and
// (newFakeCluster gives Services their ClusterIP).
type kubelet struct {
	cs     *fake.Clientset
	ns     string
	behave func(p *corev1.Pod) *corev1.PodStatus
	stop   chan struct{}
	done   chan struct{}
}

func startKubelet(t *testing.T, cs *fake.Clientset, ns string, behave func(p *corev1.Pod) *corev1.PodStatus) *kubelet {
	k := &kubelet{cs: cs, ns: ns, behave: behave, stop: make(chan struct{}), done: make(chan struct{})}
	go k.loop()
	t.Cleanup(k.Stop)
	return k
}

func (k *kubelet) Stop() {
	select {
	case <-k.stop:
	default:
		close(k.stop)
		<-k.done
	}
}

func (k *kubelet) loop() {
	defer close(k.done)
	for {
		select {
		case <-k.stop:
			return
		case <-time.After(5 * time.Millisecond):
		}
		// Straight on the tracker: the kubelet's calls are not the CLI's
		// and must not show up in cs.Actions() (the RBAC test reads them).
		obj, err := k.cs.Tracker().List(podsGVR, corev1.SchemeGroupVersion.WithKind("Pod"), k.ns)
		if err != nil {
			continue
		}
		pods := obj.(*corev1.PodList)
		for i := range pods.Items {
			p := &pods.Items[i]
			if p.Annotations["fake-kubelet"] == "done" {
				continue
			}
			st := k.behave(p)
			if st == nil {
				continue
			}
			if p.Annotations == nil {
				p.Annotations = map[string]string{}
			}
			p.Annotations["fake-kubelet"] = "done"
			p.Status = *st
			if p.Status.Phase != corev1.PodPending || len(p.Status.ContainerStatuses) > 0 {
				p.Spec.NodeName = affinityNode(p)
			}
			_ = k.cs.Tracker().Update(podsGVR, p, k.ns)
		}
	}
}

var podsGVR = corev1.SchemeGroupVersion.WithResource("pods")

// affinityNode is the node a pod is pinned to.
func affinityNode(p *corev1.Pod) string {
	a := p.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return p.Spec.NodeName // pinned by nodeName (node probes)
	}
	return a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchFields[0].Values[0]
}

// running is the status of a healthy agent pod with the given IP (the
// node's IP for hostNetwork pods).
func running(ip string) *corev1.PodStatus {
	return &corev1.PodStatus{
		Phase: corev1.PodRunning, PodIP: ip, QOSClass: corev1.PodQOSBurstable,
		Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
			{Type: corev1.PodReady, Status: corev1.ConditionTrue},
		},
		ContainerStatuses: []corev1.ContainerStatus{{Name: ContainerNm, Ready: true,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}},
	}
}

// testSysctls is what every healthAgent says its namespace applies.
var testSysctls = agent.Sysctls{Values: map[string]string{SysctlPortRange: "1024 65535", SysctlTWReuse: "1", "net.core.somaxconn": "4096"},
	Unreadable: map[string]string{"net.core.rmem_max": "absent in this network namespace"}}

// healthAgent answers the control API's health check (and the sysctls) the way an agent
// does (bearer token, checksum header), accepting only the token in the
// run's Secret: it proves the CLI uses what the pods get. It stands in for
// agents in tests about the Kubernetes side; the agent protocol itself is
// exercised with real agents in the lab tests.
type healthAgent struct {
	srv   *httptest.Server
	mu    sync.Mutex
	calls int
	// runs counts the test runs asked for (the reachability check of the
	// test Services); the first refuse of them fail as an unprogrammed
	// Service does.
	runs, refuse int
	// stats counts the node stat readings.
	stats int
	// httpStatus answers an HTTP probe of path (nil: 404, no HTTP
	// client): the test plays the proxy on the path.
	httpStatus func(path string) int
	// runHook, when set, sees each test run first (its number from 1 and
	// what it dials; ctx ends with the request): an error is answered 502,
	// as a control connection cut by a dying agent.
	runHook func(ctx context.Context, n int, o engine.Options) error
}

func startHealthAgent(t *testing.T, cs *fake.Clientset, ns string) *healthAgent {
	h := &healthAgent{}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s, err := cs.CoreV1().Secrets(ns).Get(r.Context(), SecretName, metav1.GetOptions{})
		if err != nil || len(s.Data[SecretKey]) < 32 || r.Header.Get("Authorization") != "Bearer "+string(s.Data[SecretKey]) {
			http.Error(w, "bad or missing agent token", http.StatusUnauthorized)
			return
		}
		var answer any
		switch r.URL.Path {
		case agent.PathHealth:
			h.mu.Lock()
			h.calls++
			h.mu.Unlock()
			answer = agent.Health{OK: true, Version: "test", PID: 1}
		case agent.PathSysctls:
			answer = testSysctls
		case agent.PathNodeStat: // one machine's kernel, a second of user time more at every reading
			h.mu.Lock()
			h.stats++
			answer = agent.NodeStat{Kernel: "fake-boot-id", All: procstat.Times{User: float64(h.stats)}, CPUs: 2}
			h.mu.Unlock()
		case agent.PathKind + results.KindRR:
			var o engine.Options
			_ = json.NewDecoder(r.Body).Decode(&o)
			h.mu.Lock()
			h.runs++
			n, hook := h.runs, h.runHook
			refused := h.runs <= h.refuse
			h.mu.Unlock()
			if hook != nil {
				if err := hook(r.Context(), n, o); err != nil {
					http.Error(w, err.Error(), http.StatusBadGateway)
					return
				}
			}
			res := engine.Result{Transactions: 1000}
			if refused {
				res = engine.Result{Errors: 1, ErrorsByCause: map[string]int64{"ECONNREFUSED": 1}}
			}
			answer = res
		case agent.PathKind + results.KindHTTP:
			var o httpload.Options
			if h.httpStatus == nil || json.NewDecoder(r.Body).Decode(&o) != nil {
				http.NotFound(w, r)
				return
			}
			answer = httpload.Result{Requests: 100, StatusCodes: map[int]int64{h.httpStatus(o.Path): 100}}
		default:
			http.NotFound(w, r)
			return
		}
		b, _ := json.Marshal(answer)
		sum := sha256.Sum256(b)
		w.Header().Set(agent.HeaderChecksum, hex.EncodeToString(sum[:]))
		_, _ = w.Write(b)
	}))
	t.Cleanup(h.srv.Close)
	return h
}

// refuseRuns makes the first n test runs fail with connection refused.
func (h *healthAgent) refuseRuns(n int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.refuse = n
}

// Runs is how many test runs were asked for.
func (h *healthAgent) Runs() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.runs
}

func (h *healthAgent) Calls() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.calls
}

// staticAccess points every pod's control API at one address.
type staticAccess struct {
	addr   string
	closed bool
}

func (a *staticAccess) Control(_ context.Context, p *corev1.Pod) (string, error) {
	return "tcp:" + strings.TrimPrefix(a.addr, "http://"), nil
}
func (a *staticAccess) Close() error { a.closed = true; return nil }
func (a *staticAccess) Name() string { return "test (one health server)" }
