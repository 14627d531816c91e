package k8starget

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/version"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/cnibench/cnibench/agent"
	"github.com/cnibench/cnibench/engine"
	"github.com/cnibench/cnibench/lab"
	"github.com/cnibench/cnibench/report"
	"github.com/cnibench/cnibench/results"
	"github.com/cnibench/cnibench/suite"
)

// labKubelet backs the fake cluster's pods with real agents: each agent
// pod becomes a real `agent.Serve` process in the lab namespace of the same
// endpoint name (node0-pod0 → cnb-<lab>-node0-pod0; host-network node0 →
// the node namespace), started with the token from the run's Secret, and
// the pod gets that endpoint's lab address as its IP. Test traffic then
// flows between lab namespaces through the real kernel.
type labKubelet struct {
	t   *testing.T
	lab *lab.Lab
	cs  *fake.Clientset
	dir string // agents' unix control sockets

	mu    sync.Mutex
	procs []*exec.Cmd
	stdin []io.Closer
	byPod map[string]*exec.Cmd
}

func (k *labKubelet) behave(p *corev1.Pod) *corev1.PodStatus {
	name := p.Labels[LabelEndpoint]
	ep, err := k.lab.Endpoint(name)
	if err != nil {
		k.t.Errorf("pod %s: %v", p.Name, err)
		return nil
	}
	sec, err := k.cs.Tracker().Get(corev1.SchemeGroupVersion.WithResource("secrets"), p.Namespace, SecretName)
	if err != nil {
		k.t.Errorf("pod %s: the Secret its env refers to is missing: %v", p.Name, err)
		return nil
	}
	self, _ := os.Executable()
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), agentControlEnv+"=unix:"+filepath.Join(k.dir, name+".sock"),
		agent.TokenEnv+"="+string(sec.(*corev1.Secret).Data[SecretKey]))
	logf, _ := os.Create(filepath.Join(k.dir, name+".log"))
	cmd.Stdout, cmd.Stderr = logf, logf
	stdin, _ := cmd.StdinPipe()
	if err := k.lab.Start(ep, cmd, nil); err != nil {
		k.t.Errorf("start agent for %s: %v", p.Name, err)
		return nil
	}
	k.mu.Lock()
	k.procs, k.stdin = append(k.procs, cmd), append(k.stdin, stdin)
	if k.byPod == nil {
		k.byPod = map[string]*exec.Cmd{}
	}
	k.byPod[p.Name] = cmd
	k.mu.Unlock()
	return running(ep.IP)
}

// stop ends every agent (they exit when stdin closes).
func (k *labKubelet) stop() {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, s := range k.stdin {
		s.Close()
	}
	for _, c := range k.procs {
		done := make(chan struct{})
		go func() { _ = c.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(3 * time.Second):
			_ = c.Process.Kill()
			<-done
		}
	}
	k.procs, k.stdin = nil, nil
}

// unixAccess reaches each agent on its unix control socket (the lab's
// addresses are not routable from the test's namespace, by design).
type unixAccess struct{ dir string }

func (a unixAccess) Control(_ context.Context, p *corev1.Pod) (string, error) {
	return "unix:" + filepath.Join(a.dir, p.Labels[LabelEndpoint]+".sock"), nil
}
func (unixAccess) Close() error { return nil }
func (unixAccess) Name() string { return "unix sockets of lab agents (test)" }

// labNode is a fake Node standing for a lab node: this machine's kernel
// and OS, no cloud labels.
func labNode(name string) *corev1.Node {
	env := results.CollectEnvironment()
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/os": "linux"}},
		Status: corev1.NodeStatus{
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
			NodeInfo:   corev1.NodeSystemInfo{KernelVersion: env.Kernel, OSImage: env.OS, Architecture: runtime.GOARCH, OperatingSystem: "linux"},
		},
	}
}

// A real suite run of kind "k8s": the target creates its pods in a fake
// cluster, real agents in a lab stand in for them, and the runner takes
// real measurements through the agents' control API. The results document
// is a genuine k8s-target results.json (provenance says which cluster it
// was: a fake clientset over lab namespaces). Set CNIBENCH_K8S_RESULTS=DIR
// to keep it.
func TestRunOnLabBackedCluster(t *testing.T) {
	l := newLab(t, 2, 2)
	cs := newFakeCluster(labNode("lab-node0"), labNode("lab-node1"))
	// Say plainly in the provenance what this "cluster" is.
	cs.Discovery().(*fakediscovery.FakeDiscovery).FakedServerVersion = &version.Info{GitVersion: "fake-clientset (pods backed by lab agents)", Platform: runtime.GOOS + "/" + runtime.GOARCH}
	dir, err := os.MkdirTemp("", "cnbk8s")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	kl := &labKubelet{t: t, lab: l, cs: cs, dir: dir}
	t.Cleanup(kl.stop)
	startKubelet(t, cs, testNS, kl.behave)

	placements := []string{suite.PodToPodSameNode, suite.PodToPodOtherNode, suite.HostToHostOtherNod}
	cfg := Config{Namespace: testNS, Image: "ghcr.io/cnibench/cnibench:test", RunID: "labrun-" + l.Config.Name,
		Placements: placements, Timeout: 20 * time.Second, Progress: testWriter{t}}
	tgt, err := Open(context.Background(), cfg, cs, unixAccess{dir}, "fake-clientset-over-lab-"+l.Config.Name)
	if err != nil {
		t.Fatal(err)
	}
	defer tgt.Close()
	plan, err := suite.Options{Tests: []string{"TCP_RR", "TCP_STREAM"}, Placements: placements,
		Duration: time.Second, Warmup: 200 * time.Millisecond}.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	out := os.Getenv("CNIBENCH_K8S_RESULTS")
	if out == "" {
		out = t.TempDir()
	} else if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	runner := &suite.Runner{Scenarios: []suite.Scenario{{Name: "k8s", Target: tgt}}, Plan: plan, OutDir: out, RunID: cfg.RunID, Progress: testWriter{t}}
	run, err := runner.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// The document on disk is what the runner returned, kind k8s, with
	// the placements mapped onto the pods' lab addresses.
	saved, err := results.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	if saved.Target.Kind != "k8s" || saved.Status != results.StatusComplete || len(saved.Results) != 6 {
		t.Fatalf("saved run: kind %q status %q, %d results", saved.Target.Kind, saved.Status, len(saved.Results))
	}
	addr := map[string]string{}
	for _, ep := range l.Endpoints() {
		addr[ep.Name] = ep.IP
	}
	for _, r := range run.Results {
		if len(r.Samples) != 1 || r.Samples[0].Error != "" || r.Samples[0].Result == nil {
			t.Fatalf("%s %s: samples %+v", r.Test, r.Placement.Name(), r.Samples)
		}
		e := r.Samples[0].Result.(*engine.Result)
		if r.Placement.ServerAddr != addr[r.Placement.Server] {
			t.Errorf("%s dialled %s, the lab address of %s is %s", r.Placement.Name(), r.Placement.ServerAddr, r.Placement.Server, addr[r.Placement.Server])
		}
		switch r.Test {
		case "TCP_RR":
			if e.Transactions < 100 || e.Errors != 0 {
				t.Errorf("TCP_RR %s: %d transactions, %d errors", r.Placement.Name(), e.Transactions, e.Errors)
			}
		case "TCP_STREAM":
			if e.BytesReceived < 1<<20 || e.ThroughputBitsSec <= 0 {
				t.Errorf("TCP_STREAM %s: %d bytes received", r.Placement.Name(), e.BytesReceived)
			}
		}
		if r.Samples[0].ClientCPUSec != 0 {
			t.Errorf("CPU recorded although the k8s target cannot account it")
		}
	}
	d := saved.Target.Details
	if d["kubernetes_version"] == "" || d["endpoints"].(map[string]any)["node1"].(map[string]any)["ip"] != addr["node1"] {
		t.Errorf("details: %v", d)
	}
	// Real agents in lab namespaces read their real sysctls: the lab's
	// port range in the pods, recorded per endpoint.
	sys, _ := d["endpoint_sysctls"].(map[string]any)
	for _, ep := range []string{"node0-pod0", "node1-pod0"} {
		vals, _ := sys[ep].(map[string]any)["values"].(map[string]any)
		if vals[SysctlPortRange] != "1024 65535" {
			t.Errorf("%s: effective sysctls %v, want the lab's port range", ep, sys[ep])
		}
	}
	var b strings.Builder
	if err := report.Table(&b, saved); err != nil || !strings.Contains(b.String(), "TCP_RR") {
		t.Errorf("report: %v\n%s", err, b.String())
	}
	// A k8s run and a lab run render in one comparison (as `cnibench
	// compare` does): a column each, the cells they share side by side.
	labRun, err := results.Load(filepath.Join("..", "..", "report", "testdata"))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := report.Build([]report.Input{{Run: labRun, Label: "lab"}, {Run: saved, Label: "k8s"}}, report.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var md strings.Builder
	if err := report.Markdown(&md, rep); err != nil {
		t.Fatal(err)
	}
	shared := 0
	for _, g := range rep.Glance {
		if g.Test == "TCP_RR" && g.Placement == suite.PodToPodSameNode && len(g.Values) >= 2 {
			lab, k8s := g.Values[0], g.Values[len(g.Values)-1]
			if lab != nil && k8s != nil && lab.N > 0 && k8s.N > 0 {
				shared++
			}
		}
	}
	if shared == 0 || !strings.Contains(md.String(), "TCP_RR") {
		t.Errorf("compare report of a lab and a k8s run has no TCP_RR pod-to-pod/same-node row with both values:\n%s", md.String())
	}
	if err := tgt.Close(); err != nil {
		t.Fatal(err)
	}
	assertClean(t, cs)
	left, _ := cs.CoreV1().Pods(testNS).List(context.Background(), metav1.ListOptions{})
	if len(left.Items) != 0 {
		t.Errorf("%d pods left", len(left.Items))
	}
}

// testWriter sends progress lines to the test log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	if s := strings.TrimSpace(string(p)); s != "" {
		w.t.Log(s)
	}
	return len(p), nil
}
