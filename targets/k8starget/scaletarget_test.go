package k8starget

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/cnibench/cnibench/agent"
	"github.com/cnibench/cnibench/agent/nodeprobe"
	"github.com/cnibench/cnibench/datapath"
	"github.com/cnibench/cnibench/datapath/sweep"
	"github.com/cnibench/cnibench/suite"
)

// scaleConfig is a Service-scale run of pod-to-service/other-node with
// node probes, fast enough for tests.
func scaleConfig(runID string) Config {
	cfg := testConfig(runID)
	cfg.Placements = []string{PodToServiceOtherNode}
	cfg.Scale = &ScaleConfig{SyncTimeout: 3 * time.Second, SyncInterval: 10 * time.Millisecond,
		Services: 8, Endpoints: 2, QPS: 1000, Burst: 1000, RolloutTimeout: 2 * time.Second}
	return cfg
}

// fakeProbe plays `cnibench agent --node-probe` for one node: its counts
// are the node's baseline plus the dummy Services and EndpointSlice
// endpoints the fake API server holds, as they were lag ago (kube-proxy or
// Cilium catching up). It answers over real HTTP with the run's token and
// the checksum header, as the agent does.
type fakeProbe struct {
	cs   *fake.Clientset
	node string
	base nodeprobe.Report
	lag  time.Duration
	mode string // "" (syncs after lag), "never" (baseline forever), "unsupported", "no-test-service" (never holds the run's Service)
	srv  *httptest.Server

	mu      sync.Mutex
	history []snapshot // counts the API server held, oldest first
	reads   int
}

type snapshot struct {
	at                  time.Time
	services, endpoints int
}

func startProbe(t *testing.T, cs *fake.Clientset, node string, base nodeprobe.Report, lag time.Duration, mode string) *fakeProbe {
	p := &fakeProbe{cs: cs, node: node, base: base, lag: lag, mode: mode}
	p.base.Node = node
	p.srv = httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(p.srv.Close)
	return p
}

// apiCounts reads the tracker directly, so the probe's reads never show
// up in cs.Actions() (the RBAC test replays those).
func (p *fakeProbe) apiCounts() (services, endpoints int) {
	if l, err := p.cs.Tracker().List(corev1.SchemeGroupVersion.WithResource("services"), corev1.SchemeGroupVersion.WithKind("Service"), testNS); err == nil {
		for _, s := range l.(*corev1.ServiceList).Items {
			if s.Labels[LabelRole] == "scale" {
				services++
			}
		}
	}
	gvr := discoveryv1.SchemeGroupVersion.WithResource("endpointslices")
	if l, err := p.cs.Tracker().List(gvr, discoveryv1.SchemeGroupVersion.WithKind("EndpointSlice"), testNS); err == nil {
		for _, s := range l.(*discoveryv1.EndpointSliceList).Items {
			if s.Labels[LabelRole] == "scale" {
				endpoints += len(s.Endpoints)
			}
		}
	}
	return services, endpoints
}

// runKeys are the keys (Cilium's: clusterIP:port/proto) of the run's own
// Services, which the node holds from the start.
func (p *fakeProbe) runKeys() []string {
	var keys []string
	if l, err := p.cs.Tracker().List(corev1.SchemeGroupVersion.WithResource("services"), corev1.SchemeGroupVersion.WithKind("Service"), testNS); err == nil {
		for _, s := range l.(*corev1.ServiceList).Items {
			ip, err := netip.ParseAddr(s.Spec.ClusterIP)
			if s.Labels[LabelRole] == "scale" || err != nil {
				continue
			}
			for _, pt := range s.Spec.Ports {
				keys = append(keys, nodeprobe.Key(nodeprobe.Cilium, nodeprobe.ServicePort{Protocol: string(pt.Protocol), ClusterIP: ip, Port: uint16(pt.Port)}))
			}
		}
	}
	return keys
}

// report is what the node holds now: the newest API state at least lag old.
func (p *fakeProbe) report() nodeprobe.Report {
	s, e := p.apiCounts()
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.reads++
	if n := len(p.history); n == 0 || p.history[n-1].services != s || p.history[n-1].endpoints != e {
		p.history = append(p.history, snapshot{now, s, e})
	}
	r := p.base
	if p.mode != "no-test-service" {
		r.Keys = p.runKeys()
	}
	if p.mode == "never" {
		return r
	}
	for i := len(p.history) - 1; i >= 0; i-- {
		if h := p.history[i]; now.Sub(h.at) >= p.lag {
			r.Services += h.services
			r.Endpoints += h.endpoints
			break
		}
	}
	return r
}

func (p *fakeProbe) serve(w http.ResponseWriter, r *http.Request) {
	obj, err := p.cs.Tracker().Get(corev1.SchemeGroupVersion.WithResource("secrets"), testNS, SecretName)
	if err != nil || r.Header.Get("Authorization") != "Bearer "+string(obj.(*corev1.Secret).Data[SecretKey]) {
		http.Error(w, "bad or missing agent token", http.StatusUnauthorized)
		return
	}
	var v any
	switch r.URL.Path {
	case agent.PathHealth:
		v = agent.Health{OK: true, Version: "probe", PID: 1}
	case agent.PathNodeServices:
		if r.URL.Query().Get("cni") == "1" { // Cilium's CNI config, not a datapath read
			v = nodeprobe.Report{Node: p.node, CNI: &nodeprobe.CNIConfig{Dir: nodeprobe.DefaultCNIConfDir, Files: []string{"05-cilium.conflist"},
				File: "05-cilium.conflist", Network: "cilium", CNIVersion: "0.3.1", Plugins: []string{"cilium-cni"}}}
			break
		}
		if p.mode == "unsupported" {
			http.Error(w, fmt.Sprintf("nodeprobe: %v: no kube-proxy nftables objects or Cilium map found and the nat table is iptables-legacy", errors.ErrUnsupported), http.StatusNotImplemented)
			return
		}
		v = p.report()
	default:
		http.NotFound(w, r)
		return
	}
	b, _ := json.Marshal(v)
	sum := sha256.Sum256(b)
	w.Header().Set(agent.HeaderChecksum, hex.EncodeToString(sum[:]))
	_, _ = w.Write(b)
}

func (p *fakeProbe) Reads() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.reads
}

// probeAccess sends the agents' control API to the health agent and each
// node's probe port to that node's fake probe.
type probeAccess struct {
	staticAccess
	probes map[string]*fakeProbe // node → probe
}

func (a *probeAccess) ControlOn(_ context.Context, p *corev1.Pod, port int) (string, error) {
	pr, ok := a.probes[p.Spec.NodeName]
	if port != agent.DefaultProbePort || !ok {
		return "", fmt.Errorf("no probe for pod %s on node %q port %d", p.Name, p.Spec.NodeName, port)
	}
	return "tcp:" + strings.TrimPrefix(pr.srv.URL, "http://"), nil
}

// ciliumBase is a node's Cilium LB map before the sweep.
var ciliumBase = nodeprobe.Report{Datapath: nodeprobe.Cilium, Services: 40, Endpoints: 130, BPFMapBytes: 5 << 20}

// scaleCluster is twoNodeCluster with a probe per worker and the agents'
// health server; modes and lags per node.
func scaleCluster(t *testing.T, lag map[string]time.Duration, mode map[string]string, extra ...runtime.Object) (*fake.Clientset, *probeAccess) {
	cs := twoNodeCluster(extra...)
	startKubelet(t, cs, testNS, healthy)
	h := startHealthAgent(t, cs, testNS)
	acc := &probeAccess{staticAccess: staticAccess{addr: h.srv.URL}, probes: map[string]*fakeProbe{}}
	for _, n := range []string{"worker-a", "worker-b"} {
		acc.probes[n] = startProbe(t, cs, n, ciliumBase, lag[n], mode[n])
	}
	return cs, acc
}

// A sweep of 3 steps through suite.Runner with the ServiceScale schedule on a fake cluster: each
// step waits until both nodes' probes report baseline + the step's
// dummies, records the sync time per node (at least the probe's lag),
// Cilium's BPF map memory, and the conntrack preflight is skipped with a
// note; Close removes every dummy and object.
func TestScaleSweepSyncedOnNodes(t *testing.T) {
	lag := map[string]time.Duration{"worker-a": 150 * time.Millisecond, "worker-b": 40 * time.Millisecond}
	cs, acc := scaleCluster(t, lag, nil)
	var progress bytes.Buffer
	cfg := scaleConfig("sweep1")
	cfg.Progress = &syncWriter{w: &progress}
	tgt, err := Open(context.Background(), cfg, cs, acc, "test-ctx")
	if err != nil {
		t.Fatal(err)
	}
	defer tgt.Close()
	pods, _ := cs.CoreV1().Pods(testNS).List(context.Background(), metav1.ListOptions{LabelSelector: LabelRole + "=" + RoleProbe})
	if len(pods.Items) != 2 {
		t.Fatalf("%d probe pods, want one per node", len(pods.Items))
	}
	plan, err := suite.Options{Tests: suite.ScaleTests, Placements: []string{suite.PodToServiceOtherNode}, Rounds: 1,
		Duration: 100 * time.Millisecond, Warmup: 10 * time.Millisecond}.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	runner := &suite.Runner{Scenarios: []suite.Scenario{{Name: "k8s", Target: tgt}}, Plan: plan,
		Schedule: &suite.ServiceScale{Sweep: sweep.Options{Steps: []int{0, 3, 8}, Endpoints: 2, Position: datapath.PositionLast}}, OutDir: t.TempDir(), RunID: "sweep1", Progress: cfg.Progress}
	run, err := runner.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	sw := run.Sweeps[0]
	if sw.Datapath != "cilium" || len(sw.Steps) != 3 || sw.Error != "" {
		t.Fatalf("sweep %s: %d steps, error %q", sw.Datapath, len(sw.Steps), sw.Error)
	}
	if len(sw.Notes) != 1 || !strings.Contains(sw.Notes[0], "conntrack preflight skipped") {
		t.Errorf("notes %q: want the skipped conntrack preflight", sw.Notes)
	}
	for _, st := range sw.Steps {
		s := st.Sync
		if s == nil || s.Mode != SyncNode || len(s.Nodes) != 2 {
			t.Fatalf("step %d: sync %+v", st.Services, s)
		}
		for _, n := range s.Nodes {
			if n.Mode != SyncNode || n.WantServices != 40+st.Services || n.WantEndpoints != 130+2*st.Services ||
				n.Services < n.WantServices || n.Endpoints < n.WantEndpoints {
				t.Errorf("step %d node %s: %+v", st.Services, n.Node, n)
			}
			if st.Services > 0 && n.Time < lag[n.Node] {
				t.Errorf("step %d node %s synced in %s, before its datapath held the Services (lag %s)", st.Services, n.Node, n.Time, lag[n.Node])
			}
		}
		if st.Memory.BPFMapBytes != int64(ciliumBase.BPFMapBytes) {
			t.Errorf("step %d memory %+v, want the client node's BPF maps", st.Services, st.Memory)
		}
		if st.Conntrack != suite.ConntrackUnknown {
			t.Errorf("step %d conntrack %d, want unknown", st.Services, st.Conntrack)
		}
	}
	d := run.Target.Details["service_scale"].(map[string]any)
	if d["sync_verify"] != SyncNode || d["service_proxy"] != "cilium" {
		t.Errorf("details %v", d)
	}
	if !strings.Contains(progress.String(), "node sync worker-a") {
		t.Errorf("progress lacks the per-node sync: %s", progress.String())
	}
	if err := tgt.Close(); err != nil {
		t.Fatal(err)
	}
	assertClean(t, cs)
}

// sweepCluster opens a scale target and sweeps it with sweep.Run.
func sweepCluster(t *testing.T, cs *fake.Clientset, acc Access, cfg Config, steps []int) (*Target, []sweep.Step, error) {
	t.Helper()
	tgt, err := Open(context.Background(), cfg, cs, acc, "")
	if err != nil {
		t.Fatal(err)
	}
	dp, test, err := tgt.ScaleDatapath()
	if err != nil {
		t.Fatal(err)
	}
	got, err := sweep.Run(context.Background(), dp, test, sweep.Options{Steps: steps, Endpoints: 2}, nil, nil)
	return tgt, got, err
}

// A node whose datapath never catches up fails the step after
// --sync-timeout with an error naming the node, what it holds and what
// was expected; the step is not measured.
func TestScaleSyncTimeoutNamesNode(t *testing.T) {
	cs, acc := scaleCluster(t, nil, map[string]string{"worker-b": "never"})
	cfg := scaleConfig("sweep2")
	cfg.Scale.SyncTimeout = 300 * time.Millisecond
	start := time.Now()
	tgt, steps, err := sweepCluster(t, cs, acc, cfg, []int{0, 4})
	if err == nil {
		t.Fatal("a node that never synced passed")
	}
	for _, want := range []string{"node worker-b not synced 300ms after the API writes", "holds 40 Services / 130 endpoints", "want at least 44 / 138", "baseline 40 / 130 + this step's 4 / 8"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "worker-a not synced") || strings.Contains(err.Error(), "\n") {
		t.Errorf("error %q blames the synced node or is not one line", err)
	}
	if len(steps) != 2 || steps[1].Error == "" || steps[0].Error != "" {
		t.Errorf("steps %+v: the second must fail", steps)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("took %s with a 300ms sync timeout", took)
	}
	if err := tgt.Close(); err != nil {
		t.Fatal(err)
	}
	assertClean(t, cs)
}

// A probe that cannot read its datapath (kube-proxy on iptables-legacy)
// makes that node fall back to the API check, noted in the step's sync;
// the other node is still verified.
func TestScaleSyncUnsupportedFallsBack(t *testing.T) {
	cs, acc := scaleCluster(t, nil, map[string]string{"worker-b": "unsupported"})
	var progress bytes.Buffer
	cfg := scaleConfig("sweep3")
	cfg.Progress = &syncWriter{w: &progress}
	tgt, steps, err := sweepCluster(t, cs, acc, cfg, []int{0, 2, 5})
	if err != nil {
		t.Fatal(err)
	}
	defer tgt.Close()
	if len(steps) != 3 {
		t.Fatalf("%d steps", len(steps))
	}
	for _, st := range steps {
		var a, b sweep.NodeSync
		for _, n := range st.Sync.Nodes {
			if n.Node == "worker-a" {
				a = n
			} else {
				b = n
			}
		}
		if a.Mode != SyncNode || a.Services != 40+st.Services || b.Mode != SyncAPI || !strings.Contains(b.Note, "iptables-legacy") {
			t.Errorf("step %d: worker-a %+v, worker-b %+v", st.Services, a, b)
		}
		if len(st.Sync.Notes) != 1 || !strings.Contains(st.Sync.Notes[0], "node worker-b: only the API server is checked") {
			t.Errorf("step %d notes %q", st.Services, st.Sync.Notes)
		}
	}
	if p := progress.String(); !strings.Contains(p, "node worker-b: ") || !strings.Contains(p, "nodeprobe: unsupported operation") || !strings.Contains(p, "falling back to the API server check") {
		t.Errorf("progress: %s", progress.String())
	}
	if acc.probes["worker-b"].Reads() != 0 {
		t.Errorf("the unsupported probe answered reads")
	}
}

// --sync-verify api: no probe pods, the steps say only the API server was
// checked.
func TestScaleSyncAPIOnly(t *testing.T) {
	cs, acc := scaleCluster(t, nil, nil)
	cfg := scaleConfig("sweep4")
	cfg.Scale.SyncVerify = SyncAPI
	tgt, steps, err := sweepCluster(t, cs, acc, cfg, []int{0, 3})
	if err != nil {
		t.Fatal(err)
	}
	defer tgt.Close()
	pods, _ := cs.CoreV1().Pods(testNS).List(context.Background(), metav1.ListOptions{LabelSelector: LabelRole + "=" + RoleProbe})
	if len(pods.Items) != 0 || acc.probes["worker-a"].Reads() != 0 {
		t.Errorf("%d probe pods, %d probe reads with --sync-verify api", len(pods.Items), acc.probes["worker-a"].Reads())
	}
	if s := steps[1].Sync; s == nil || s.Mode != SyncAPI || len(s.Nodes) != 0 || !strings.Contains(s.Notes[0], "only the API server") {
		t.Errorf("sync %+v", s)
	}
	if steps[1].Counts.Services != 3 || steps[1].Counts.Endpoints != 6 {
		t.Errorf("API counts %+v", steps[1].Counts)
	}
}

// rollOut makes the fake DaemonSet controller roll every template change
// out at once and counts the restarts.
func rollOut(cs *fake.Clientset) func() int {
	var mu sync.Mutex
	restarts := 0
	cs.PrependReactor("update", "daemonsets", func(a k8stesting.Action) (bool, runtime.Object, error) {
		ds := a.(k8stesting.UpdateAction).GetObject().(*appsv1.DaemonSet)
		mu.Lock()
		restarts++
		mu.Unlock()
		ds.Generation++
		ds.Status.ObservedGeneration = ds.Generation
		ds.Status.UpdatedNumberScheduled = ds.Status.DesiredNumberScheduled
		ds.Status.NumberReady = ds.Status.DesiredNumberScheduled
		return false, nil, nil
	})
	return func() int { mu.Lock(); defer mu.Unlock(); return restarts }
}

// defaultLBMap removes bpf-lb-map-max from the fake cilium-config (65536).
func defaultLBMap(t *testing.T, cs *fake.Clientset) {
	gvr := corev1.SchemeGroupVersion.WithResource("configmaps")
	obj, err := cs.Tracker().Get(gvr, "kube-system", "cilium-config")
	if err != nil {
		t.Fatal(err)
	}
	cm := obj.(*corev1.ConfigMap)
	delete(cm.Data, "bpf-lb-map-max")
	if err := cs.Tracker().Update(gvr, cm, "kube-system"); err != nil {
		t.Fatal(err)
	}
}

func lbMapMax(cs *fake.Clientset) (string, bool) {
	obj, _ := cs.Tracker().Get(corev1.SchemeGroupVersion.WithResource("configmaps"), "kube-system", "cilium-config")
	v, ok := obj.(*corev1.ConfigMap).Data["bpf-lb-map-max"]
	return v, ok
}

// The LB-map preflight runs before anything is created: without
// --allow-cluster-changes a too small map is refused and nothing changes;
// with it the map is raised, recorded in the details, and Close reverts it,
// also after the run's context was cancelled.
func TestScaleLBMapPreflight(t *testing.T) {
	cs, acc := scaleCluster(t, nil, nil)
	defaultLBMap(t, cs)
	restarts := rollOut(cs)
	cfg := scaleConfig("lb1")
	cfg.Scale.Services, cfg.Scale.Endpoints = 30000, 4
	_, err := Open(context.Background(), cfg, cs, acc, "")
	if err == nil || !strings.Contains(err.Error(), "bpf-lb-map-max=65536") || !strings.Contains(err.Error(), "--allow-cluster-changes") {
		t.Fatalf("too small a map without permission: %v", err)
	}
	if _, set := lbMapMax(cs); set || restarts() != 0 {
		t.Fatalf("the refusal changed the cluster (%d restarts)", restarts())
	}
	pods, _ := cs.CoreV1().Pods(testNS).List(context.Background(), metav1.ListOptions{})
	if len(pods.Items) != 0 {
		t.Errorf("%d pods created before the preflight refused", len(pods.Items))
	}
	assertClean(t, cs)

	for _, cancelled := range []bool{false, true} {
		cfg := scaleConfig(fmt.Sprintf("lb-%v", cancelled))
		cfg.Scale.Services, cfg.Scale.Endpoints, cfg.Scale.AllowClusterChanges = 30000, 4, true
		ctx, cancel := context.WithCancel(context.Background())
		tgt, err := Open(ctx, cfg, cs, acc, "")
		if err != nil {
			t.Fatal(err)
		}
		if v, _ := lbMapMax(cs); v != "262144" {
			t.Fatalf("bpf-lb-map-max %q after the preflight, want 262144", v)
		}
		ch := tgt.Details()["service_scale"].(map[string]any)["cluster_change"].(map[string]any)
		if ch["new"] != "262144" || ch["old_present"] != false || ch["reverted"] != false {
			t.Errorf("recorded change %v", ch)
		}
		if cancelled {
			dp, test, _ := tgt.ScaleDatapath()
			sw, _ := sweep.New(dp, test, sweep.Options{Steps: []int{0, 3}, Endpoints: 2})
			for range 2 {
				if _, err := sw.Next(ctx, nil); err != nil {
					t.Fatal(err)
				}
			}
			cancel() // Ctrl-C during the sweep
		}
		before := restarts()
		if err := tgt.Close(); err != nil {
			t.Fatal(err)
		}
		cancel()
		if v, set := lbMapMax(cs); set || restarts() != before+1 || !tgt.ClusterChange().Reverted {
			t.Errorf("cancelled %v: after Close bpf-lb-map-max %q (set %v), %d restarts", cancelled, v, set, restarts()-before)
		}
		if ch := tgt.Details()["service_scale"].(map[string]any)["cluster_change"].(map[string]any); ch["reverted"] != true {
			t.Errorf("the revert is not in the details: %v", ch)
		}
		assertClean(t, cs)
	}
}

// On a one-node cluster the sweep measures pod-to-service/same-node: the
// test Service fronts node0-pod1, other-node is skipped with the reason,
// and the results record the placement.
func TestScaleSweepOneNode(t *testing.T) {
	cs := newFakeCluster(append([]runtime.Object{testNode("worker-a")}, ciliumObjects("worker-a")...)...)
	startKubelet(t, cs, testNS, healthy)
	h := startHealthAgent(t, cs, testNS)
	acc := &probeAccess{staticAccess: staticAccess{addr: h.srv.URL},
		probes: map[string]*fakeProbe{"worker-a": startProbe(t, cs, "worker-a", ciliumBase, 20*time.Millisecond, "")}}
	cfg := scaleConfig("sweep1n")
	cfg.Placements = []string{PodToServiceOtherNode, PodToServiceSameNode} // the CLI's candidates
	tgt, err := Open(context.Background(), cfg, cs, acc, "test-ctx")
	if err != nil {
		t.Fatal(err)
	}
	defer tgt.Close()
	if pl, err := tgt.ScalePlacement(); err != nil || pl != PodToServiceSameNode {
		t.Fatalf("sweep placement %q (%v), want %s", pl, err, PodToServiceSameNode)
	}
	if _, err := cs.CoreV1().Services(testNS).Get(context.Background(), ServiceName("node0-pod1"), metav1.GetOptions{}); err != nil {
		t.Fatalf("no Service in front of node0-pod1: %v", err)
	}
	if _, err := tgt.Placement(PodToServiceOtherNode); !errors.Is(err, suite.ErrUnsupported) {
		t.Errorf("other-node on one node: %v, want unsupported", err)
	}
	plan, err := suite.Options{Tests: []string{"TCP_RR"}, Placements: []string{PodToServiceSameNode}, Rounds: 1,
		Duration: 100 * time.Millisecond, Warmup: 10 * time.Millisecond}.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	runner := &suite.Runner{Scenarios: []suite.Scenario{{Name: "k8s", Target: tgt}}, Plan: plan,
		Schedule: &suite.ServiceScale{Sweep: sweep.Options{Steps: []int{0, 3}, Endpoints: 2}}, OutDir: t.TempDir(), RunID: "sweep1n"}
	run, err := runner.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if sw := run.Sweeps[0]; sw.Placement != PodToServiceSameNode || len(sw.Steps) != 2 || len(run.Plan.Placements) != 1 || run.Plan.Placements[0] != PodToServiceSameNode {
		t.Fatalf("sweep placement %q, %d steps, plan %v", sw.Placement, len(sw.Steps), run.Plan.Placements)
	}
	for _, res := range run.Results {
		if res.Placement.Name() != PodToServiceSameNode || res.Placement.Server != "node0-pod1" || len(res.Samples) != 1 {
			t.Errorf("%s at %d: placement %+v, %d samples", res.Test, res.Services, res.Placement, len(res.Samples))
		}
	}
	if d := run.Target.Details["service_scale"].(map[string]any); d["placement"] != PodToServiceSameNode {
		t.Errorf("details %v: want the placement", d)
	}
	if err := tgt.Close(); err != nil {
		t.Fatal(err)
	}
	assertClean(t, cs)
}

// The test Service must be held by every node's datapath (by its keys)
// before the baseline is taken, when the target opens: a node that never
// programs it fails Open, naming the node and the missing ports; nothing
// is measured and nothing is left.
func TestScaleBaselineNeedsTestService(t *testing.T) {
	cs, acc := scaleCluster(t, nil, map[string]string{"worker-b": "no-test-service"})
	cfg := scaleConfig("sweep-ts")
	cfg.Scale.SyncTimeout = 300 * time.Millisecond
	tgt, err := Open(context.Background(), cfg, cs, acc, "")
	if err == nil {
		tgt.Close()
		t.Fatal("Open succeeded with a node that never holds the test Service")
	}
	msg := err.Error()
	if !strings.Contains(msg, "node worker-b: no baseline read") || !strings.Contains(msg, "does not hold the test Service's") ||
		!strings.Contains(msg, ":5203/tcp (tcp-rr)") || strings.Contains(msg, "worker-a") {
		t.Errorf("error %q: want worker-b named with the test Service's missing ports", msg)
	}
	assertClean(t, cs)
}

// A step that adds nothing takes ~0 s of programming and node sync: the
// baseline (two equal probe reads, a poll interval apart) is read when
// the target opens, not inside the first step's programming time.
func TestEmptyStepTakesNoPollInterval(t *testing.T) {
	cs, acc := scaleCluster(t, nil, nil)
	cfg := scaleConfig("zero1")
	cfg.Scale.SyncInterval = 500 * time.Millisecond
	tgt, err := Open(context.Background(), cfg, cs, acc, "")
	if err != nil {
		t.Fatal(err)
	}
	defer tgt.Close()
	dp, test, err := tgt.ScaleDatapath()
	if err != nil {
		t.Fatal(err)
	}
	sw, err := sweep.New(dp, test, sweep.Options{Steps: []int{0, 2}, Endpoints: 2, Position: datapath.PositionLast})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	st, err := sw.Next(context.Background(), nil)
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("0-Service step: %s (programming %s)", took, st.Program.Generate+st.Program.Apply)
	if took > 250*time.Millisecond || st.Program.Generate+st.Program.Apply > 250*time.Millisecond {
		t.Errorf("the 0-Service step took %s (programming %s): a poll interval (500ms) is not programming", took, st.Program.Generate+st.Program.Apply)
	}
	for _, n := range st.Sync.Nodes {
		if n.Time > 250*time.Millisecond {
			t.Errorf("node %s synced a step that adds nothing in %s", n.Node, n.Time)
		}
	}
}
