package k8starget

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"

	"github.com/cnibench/cnibench/results"
	"github.com/cnibench/cnibench/suite"
)

// usageCluster is twoNodeCluster (Cilium on cp-0, worker-a, worker-b) with
// kube-proxy on the workers and, labelled like Cilium's agents but owned
// by a ReplicaSet, a pod that must not count.
func usageCluster() *fake.Clientset {
	sel := map[string]string{"k8s-app": "kube-proxy"}
	objs := []runtime.Object{&appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "kube-proxy", Namespace: "kube-system"},
		Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: sel},
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{
				Name: "kube-proxy", Image: "registry.k8s.io/kube-proxy:v1.31.2"}}}}},
	}}
	for _, n := range []string{"worker-a", "worker-b"} {
		objs = append(objs, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "kube-proxy-" + n, Namespace: "kube-system", Labels: sel,
				OwnerReferences: []metav1.OwnerReference{{Kind: "DaemonSet", Name: "kube-proxy", Controller: ptrTrue()}}},
			Spec: corev1.PodSpec{NodeName: n},
		})
	}
	objs = append(objs, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "cilium-impostor", Namespace: "kube-system", Labels: map[string]string{"k8s-app": "cilium"},
			OwnerReferences: []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "cilium-impostor-5d8b9c7f4", Controller: ptrTrue()}}},
		Spec: corev1.PodSpec{NodeName: "worker-a"},
	})
	return twoNodeCluster(objs...)
}

func ptrTrue() *bool { b := true; return &b }

// metricsAPI serves metrics.k8s.io pod metrics and kubelet summaries, as
// the API server does, from what the test sets; it records every path.
type metricsAPI struct {
	mu        sync.Mutex
	paths     []string
	pods      map[string][2]string // pod → {cpu, memory} quantities
	summary   string               // the kubelet summary of every node; "" = 404
	forbidden bool                 // the kubelet summary is refused (no nodes/proxy right)
	missing   bool                 // no metrics API (no metrics-server)
}

func (m *metricsAPI) set(pods map[string][2]string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.pods = pods
}

func (m *metricsAPI) Paths() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.paths)
}

func (m *metricsAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.paths = append(m.paths, r.Method+" "+r.URL.Path)
	switch {
	case r.URL.Path == "/apis/metrics.k8s.io/v1beta1/namespaces/kube-system/pods" && !m.missing:
		var items []string
		for pod, u := range m.pods {
			container := strings.TrimSuffix(strings.SplitN(pod, "-worker", 2)[0], "-cp-0")
			if container == "cilium" {
				container = "cilium-agent"
			}
			items = append(items, fmt.Sprintf(`{"metadata":{"name":%q,"namespace":"kube-system"},"timestamp":"2026-11-25T12:00:00Z","window":"15.5s",
  "containers":[{"name":%q,"usage":{"cpu":%q,"memory":%q}}]}`, pod, container, u[0], u[1]))
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"kind":"PodMetricsList","apiVersion":"metrics.k8s.io/v1beta1","metadata":{},"items":[%s]}`, strings.Join(items, ","))
	case strings.HasPrefix(r.URL.Path, "/api/v1/nodes/") && strings.HasSuffix(r.URL.Path, "/proxy/stats/summary") && m.forbidden:
		// What a real API server answers a user without nodes/proxy.
		node := strings.Split(r.URL.Path, "/")[4]
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprintf(w, `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"nodes \"%s\" is forbidden: User \"alice\" cannot get resource \"nodes/proxy\" in API group \"\" at the cluster scope","reason":"Forbidden","details":{"name":"%s","kind":"nodes"},"code":403}`, node, node)
	case strings.HasPrefix(r.URL.Path, "/api/v1/nodes/") && strings.HasSuffix(r.URL.Path, "/proxy/stats/summary") && m.summary != "":
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, m.summary)
	default:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"the server could not find the requested resource","reason":"NotFound","code":404}`)
	}
}

// usageTarget is a Target as Open leaves it (nodes worker-a and worker-b,
// the CNI detected from cs) reading usage in mode, its raw reads served
// by api.
func usageTarget(t *testing.T, cs *fake.Clientset, api *metricsAPI, mode string) *Target {
	t.Helper()
	cni, err := DetectCNI(context.Background(), cs)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	raw, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	tgt := &Target{cs: cs, layout: Layout{Nodes: [2]string{"worker-a", "worker-b"}}, prov: Provenance{CNI: cni}}
	if err := tgt.SetDatapathUsage(mode); err != nil {
		t.Fatal(err)
	}
	tgt.usage.raw = raw
	return tgt
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// Metrics mode: only the datapath DaemonSets' pods on the run's two nodes
// count (not cp-0's agent, not the impostor, not other pods), CPU is the
// mean of both rates times the sample's length, memory the last read; a
// pod replaced during the sample is left out.
func TestUsageMetricsAPI(t *testing.T) {
	cs := usageCluster()
	api := &metricsAPI{}
	api.set(map[string][2]string{
		"cilium-worker-a": {"250m", "200Mi"}, "cilium-worker-b": {"100m", "150Mi"}, "cilium-cp-0": {"4", "1Gi"},
		"kube-proxy-worker-a": {"20m", "30Mi"}, "cilium-impostor": {"3", "1Gi"}, "coredns-abcde": {"2", "1Gi"},
	})
	tgt := usageTarget(t, cs, api, UsageMetrics)
	ctx := context.Background()
	mark, err := tgt.StartUsage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	api.set(map[string][2]string{
		"cilium-worker-a": {"750m", "210Mi"}, "cilium-worker-b": {"100000u", "160Mi"}, "cilium-cp-0": {"4", "1Gi"},
		"kube-proxy-worker-a": {"20000000n", "31Mi"}, "cilium-impostor": {"3", "1Gi"}, "coredns-abcde": {"2", "1Gi"},
	})
	u, err := tgt.EndUsage(ctx, mark)
	if err != nil {
		t.Fatal(err)
	}
	if u.Source != results.UsageSourceMetrics || u.Seconds < 0.02 || u.WindowSec != 15.5 {
		t.Errorf("source %q, %.3f s, window %.1f s", u.Source, u.Seconds, u.WindowSec)
	}
	var got []string
	for _, c := range u.Components {
		got = append(got, c.Plugin+"@"+c.Node+"="+c.Pod)
	}
	want := []string{"cilium@worker-a=cilium-worker-a", "cilium@worker-b=cilium-worker-b", "kube-proxy@worker-a=kube-proxy-worker-a"}
	if !slices.Equal(got, want) {
		t.Fatalf("components %v, want %v", got, want)
	}
	// (0.25+0.75)/2 + 0.1 + 0.02 cores.
	if !near(u.Cores, 0.62) || !near(u.CPUSec, 0.62*u.Seconds) || !near(u.Components[0].Cores, 0.5) {
		t.Errorf("cores %.6f (cilium-worker-a %.6f), CPU %.6f s over %.6f s: want 0.62 cores", u.Cores, u.Components[0].Cores, u.CPUSec, u.Seconds)
	}
	if u.MemoryBytes != (210+160+31)<<20 {
		t.Errorf("memory %d, want the end's working sets summed", u.MemoryBytes)
	}
	// cilium on worker-b replaced during the sample: its new pod was not
	// read at the start, the old one not at the end.
	mark, err = tgt.StartUsage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	api.set(map[string][2]string{"cilium-worker-a": {"1", "200Mi"}, "cilium-worker-b2": {"1", "1Mi"}, "kube-proxy-worker-a": {"0", "30Mi"}})
	if u, err = tgt.EndUsage(ctx, mark); err != nil || len(u.Components) != 2 || u.Components[1].Plugin != "kube-proxy" {
		t.Errorf("after a replaced pod: %v %+v", err, u)
	}
	// Only list calls of the kube-system pod metrics.
	for _, p := range api.Paths() {
		if p != "GET /apis/metrics.k8s.io/v1beta1/namespaces/kube-system/pods" {
			t.Errorf("unexpected request %s", p)
		}
	}
}

// Kubelet mode: exact deltas of the cumulative counters on both nodes; a
// restarted container is left out.
func TestUsageKubelet(t *testing.T) {
	api := &metricsAPI{summary: kubeletSummary(12_500_000_000)}
	tgt := usageTarget(t, usageCluster(), api, UsageKubelet)
	ctx := context.Background()
	mark, err := tgt.StartUsage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	api.mu.Lock()
	api.summary = kubeletSummary(13_250_000_000)
	api.mu.Unlock()
	u, err := tgt.EndUsage(ctx, mark)
	if err != nil {
		t.Fatal(err)
	}
	// cilium-agent: +0.75 s on each node; kube-proxy: +0.
	if u.Source != results.UsageSourceKubelet || len(u.Components) != 4 || !near(u.CPUSec, 1.5) ||
		u.MemoryBytes != 2*(200<<20+1<<20) || u.Components[0].Node != "worker-a" || !near(u.Components[0].CPUSec, 0.75) {
		t.Errorf("usage %+v", u)
	}
	if want := []string{"GET /api/v1/nodes/worker-a/proxy/stats/summary", "GET /api/v1/nodes/worker-b/proxy/stats/summary"}; !slices.Equal(api.Paths()[:2], want) {
		t.Errorf("requests %v, want the two run nodes' summaries", api.Paths())
	}
	mark, _ = tgt.StartUsage(ctx)
	api.mu.Lock()
	api.summary = kubeletSummary(1)
	api.mu.Unlock()
	if u, err = tgt.EndUsage(ctx, mark); err != nil || len(u.Components) != 2 || u.Components[0].Plugin != "kube-proxy" {
		t.Errorf("restarted cilium-agent kept: %v %+v", err, u)
	}
}

// No metrics-server: StartUsage says so in one line; off and an unset
// target read nothing; a fake clientset's missing REST client is an
// error, not a panic.
func TestUsageFailuresAndOff(t *testing.T) {
	ctx := context.Background()
	tgt := usageTarget(t, usageCluster(), &metricsAPI{missing: true}, UsageMetrics)
	if _, err := tgt.StartUsage(ctx); err == nil || !strings.Contains(err.Error(), "is metrics-server installed?") || strings.Contains(err.Error(), "\n") {
		t.Errorf("missing metrics API: %v", err)
	}
	tgt = usageTarget(t, usageCluster(), &metricsAPI{}, UsageKubelet)
	tgt.usage.raw = tgt.cs
	if _, err := tgt.StartUsage(ctx); err == nil || !strings.Contains(err.Error(), "no REST client") {
		t.Errorf("fake clientset as raw client: %v", err)
	}
	// Kubelet mode without nodes/proxy: the API server's own message and
	// the hint to k8s rbac --node-proxy, not "unknown (get nodes ...)".
	tgt = usageTarget(t, usageCluster(), &metricsAPI{forbidden: true}, UsageKubelet)
	_, err := tgt.StartUsage(ctx)
	if err == nil || !strings.Contains(err.Error(), `cannot get resource "nodes/proxy"`) || !strings.Contains(err.Error(), "cnibench k8s rbac --node-proxy") ||
		strings.Contains(err.Error(), "unknown") {
		t.Errorf("kubelet mode refused: %v", err)
	}
	for _, mode := range []string{UsageOff, ""} {
		tgt := &Target{}
		if mode != "" {
			if err := tgt.SetDatapathUsage(mode); err != nil {
				t.Fatal(err)
			}
		}
		if m, err := tgt.StartUsage(ctx); m != nil || err != nil {
			t.Errorf("mode %q: mark %v, %v", mode, m, err)
		}
	}
	if err := (&Target{}).SetDatapathUsage("prometheus"); err == nil {
		t.Error("unknown mode accepted")
	}
	// A cluster without recognised datapath DaemonSets: one clear error.
	noCNI := &Target{layout: Layout{Nodes: [2]string{"a", "b"}}, prov: Provenance{CNI: &CNI{Plugin: "unknown"}}}
	_ = noCNI.SetDatapathUsage(UsageMetrics)
	if _, err := noCNI.StartUsage(ctx); err == nil || !strings.Contains(err.Error(), "no datapath DaemonSet") {
		t.Errorf("no CNI: %v", err)
	}
}

// The runner on the k8s target: DNS tests are skipped with the reason,
// and a cluster without metrics-server costs one metrics API call and one
// note for the whole run (the samples fail here only because the health
// agent is no engine).
func TestUsageNoteOnceAndDNSSkipped(t *testing.T) {
	cs := usageCluster()
	startKubelet(t, cs, testNS, healthy)
	h := startHealthAgent(t, cs, testNS)
	cfg := testConfig("usage")
	cfg.Placements = []string{suite.PodToPodSameNode}
	tgt, err := Open(context.Background(), cfg, cs, &staticAccess{addr: h.srv.URL}, "")
	if err != nil {
		t.Fatal(err)
	}
	defer tgt.Close()
	api := &metricsAPI{missing: true}
	srv := httptest.NewServer(api)
	defer srv.Close()
	if err := tgt.SetDatapathUsage(UsageMetrics); err != nil {
		t.Fatal(err)
	}
	if tgt.usage.raw, err = kubernetes.NewForConfig(&rest.Config{Host: srv.URL}); err != nil {
		t.Fatal(err)
	}
	if l := tgt.Layout(); len(tgt.usage.nodes) == 0 || !slices.Equal(tgt.usage.nodes, nonEmpty(l.Nodes[:])) {
		t.Errorf("usage nodes %v, want the run's nodes %v", tgt.usage.nodes, l.Nodes)
	}
	plan, err := suite.Options{Tests: []string{"TCP_RR", "DNS_QPS_1000"}, Placements: cfg.Placements, Rounds: 3, Duration: 100 * time.Millisecond}.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	plan.Warmup = 0
	r := &suite.Runner{Scenarios: []suite.Scenario{{Name: "k8s", Target: tgt}}, Plan: plan, OutDir: t.TempDir(), RunID: "usage"}
	run, err := r.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(run.Notes) != 1 || !strings.Contains(run.Notes[0], "metrics-server") || !strings.Contains(run.Notes[0], "from the idle reading before its first sample on (not read again this run)") {
		t.Errorf("notes %q, want one about metrics-server", run.Notes)
	}
	if n := len(api.Paths()); n != 1 {
		t.Errorf("%d metrics API calls, want 1 (no reads after the first failure)", n)
	}
	for _, res := range run.Results {
		switch res.Test {
		case "DNS_QPS_1000":
			if !strings.Contains(res.Skipped, "dnsmasq") || len(res.Samples) != 0 {
				t.Errorf("DNS test not skipped with a reason: %q, %d samples", res.Skipped, len(res.Samples))
			}
		case "TCP_RR":
			if res.Skipped != "" || len(res.Samples) != 3 {
				t.Errorf("TCP_RR: skipped %q, %d samples", res.Skipped, len(res.Samples))
			}
		}
	}
}

// The usage reads are allowed by `cnibench k8s rbac`: the pod list and the
// metrics API by the default ClusterRole, the kubelet summary only with
// --node-proxy.
func TestUsageCoveredByRBAC(t *testing.T) {
	ctx := context.Background()
	for _, mode := range []string{UsageMetrics, UsageKubelet} {
		cs := usageCluster()
		api := &metricsAPI{summary: kubeletSummary(1)}
		api.set(map[string][2]string{"cilium-worker-a": {"1", "1Mi"}})
		tgt := usageTarget(t, cs, api, mode)
		cs.ClearActions()
		mark, err := tgt.StartUsage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tgt.EndUsage(ctx, mark); err != nil {
			t.Fatal(err)
		}
		objs, err := RBAC(testNS, Subject{}, WithNodeProxy())
		if err != nil {
			t.Fatal(err)
		}
		var withProxy []rbacv1.PolicyRule
		for _, o := range objs {
			if cr, ok := o.(*rbacv1.ClusterRole); ok {
				withProxy = cr.Rules
			}
		}
		type call struct{ group, resource, verb string }
		var calls []call
		for _, a := range cs.Actions() {
			if _, ok := a.(k8stesting.ListAction); !ok {
				t.Errorf("%s: unexpected %s %s", mode, a.GetVerb(), a.GetResource().Resource)
			}
			calls = append(calls, call{a.GetResource().Group, a.GetResource().Resource, a.GetVerb()})
		}
		for _, p := range api.Paths() {
			switch {
			case strings.HasPrefix(p, "GET /apis/metrics.k8s.io/v1beta1/namespaces/") && strings.HasSuffix(p, "/pods"):
				calls = append(calls, call{"metrics.k8s.io", "pods", "list"})
			case strings.HasPrefix(p, "GET /api/v1/nodes/") && strings.HasSuffix(p, "/proxy/stats/summary"):
				calls = append(calls, call{"", "nodes/proxy", "get"})
			default:
				t.Errorf("%s: unclassified request %s", mode, p)
			}
		}
		if len(calls) < 2 {
			t.Fatalf("%s: only %d calls", mode, len(calls))
		}
		for _, c := range calls {
			if !allows(withProxy, c.group, c.resource, c.verb, "") {
				t.Errorf("%s: %s %s/%s not allowed by `cnibench k8s rbac --node-proxy`", mode, c.verb, c.group, c.resource)
			}
			if allowed := allows(ClusterRules(testNS), c.group, c.resource, c.verb, ""); allowed == (c.resource == "nodes/proxy") {
				t.Errorf("%s: %s %s/%s allowed=%v by the default rules", mode, c.verb, c.group, c.resource, allowed)
			}
		}
	}
}
