package k8starget

import (
	"bytes"
	"compress/gzip"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/cnibench/cnibench/agent"
	"github.com/cnibench/cnibench/agent/nodeprobe"
	"github.com/cnibench/cnibench/suite"
)

func nodeConf(node, file string, plugins ...string) NodeCNIConfig {
	return NodeCNIConfig{Node: node, CNIConfig: nodeprobe.CNIConfig{Dir: "/etc/cni/net.d", File: file, Plugins: plugins}}
}

func nodeConfErr(node, err string) NodeCNIConfig {
	return NodeCNIConfig{Node: node, CNIConfig: nodeprobe.CNIConfig{Dir: "/etc/cni/net.d", Error: err}}
}

// How the nodes' configs name the CNI: only when no DaemonSet did; the
// first plugin of the chain, named as its DaemonSet would be; both nodes
// when they disagree; what was not read and why.
func TestApplyNodeCNI(t *testing.T) {
	cases := []struct {
		name           string
		plugin         string // before
		configs        []NodeCNIConfig
		why            string
		wantPlugin     string
		wantSource     string
		wantNodeConfig int
	}{
		{"a DaemonSet named it", "cilium", []NodeCNIConfig{nodeConf("a", "05-cilium.conflist", "cilium-cni")}, "", "cilium", "DaemonSet kube-system/cilium", 1},
		{"bridge on both", "unknown", []NodeCNIConfig{nodeConf("a", "10-cnbk.conflist", "bridge"), nodeConf("b", "10-cnbk.conflist", "bridge")}, "",
			"bridge", "node CNI config /etc/cni/net.d/10-cnbk.conflist on a; node CNI config /etc/cni/net.d/10-cnbk.conflist on b", 2},
		{"a chain is its first plugin", "unknown", []NodeCNIConfig{nodeConf("a", "10-containerd-net.conflist", "bridge", "portmap")}, "",
			"bridge", "node CNI config /etc/cni/net.d/10-containerd-net.conflist on a", 1},
		{"cilium-cni is cilium", "unknown", []NodeCNIConfig{nodeConf("a", "05-cilium.conflist", "cilium-cni")}, "",
			"cilium", "node CNI config /etc/cni/net.d/05-cilium.conflist on a", 1},
		{"the nodes disagree", "unknown", []NodeCNIConfig{nodeConf("a", "10-cnbk.conflist", "bridge"), nodeConf("b", "10-ptp.conf", "ptp")}, "",
			"bridge on a, ptp on b", "node CNI config /etc/cni/net.d/10-cnbk.conflist on a; node CNI config /etc/cni/net.d/10-ptp.conf on b (the nodes disagree)", 2},
		{"one node unreadable", "unknown", []NodeCNIConfig{nodeConf("a", "10-flannel.conflist", "flannel", "portmap"), nodeConfErr("b", "10-x.conflist: not a CNI config list: no name")}, "",
			"flannel", "node CNI config /etc/cni/net.d/10-flannel.conflist on a; not read on b: 10-x.conflist: not a CNI config list: no name", 2},
		{"none readable", "unknown", []NodeCNIConfig{nodeConfErr("a", "no CNI config file (.conf, .conflist, .json) in /etc/cni/net.d")}, "",
			"unknown", "no CNI DaemonSet found; the node's CNI config was not read: a: no CNI config file (.conf, .conflist, .json) in /etc/cni/net.d", 1},
		{"not allowed", "unknown", nil, "--node-cni-probe=false",
			"unknown", "no CNI DaemonSet found; the node's CNI config was not read: --node-cni-probe=false", 0},
	}
	for _, c := range cases {
		cni := &CNI{Plugin: c.plugin, Source: noCNIDaemonSet}
		if c.plugin != "unknown" {
			cni.Source = "DaemonSet kube-system/" + c.plugin
		}
		cni.applyNodeCNI(c.configs, c.why)
		if cni.Plugin != c.wantPlugin || cni.Source != c.wantSource || len(cni.NodeConfig) != c.wantNodeConfig {
			t.Errorf("%s: plugin %q source %q, %d node configs; want %q, %q, %d", c.name, cni.Plugin, cni.Source, len(cni.NodeConfig), c.wantPlugin, c.wantSource, c.wantNodeConfig)
		}
	}
}

// bridgeCluster is the test cluster's default mode as the API server shows
// it: two workers and kube-proxy as a DaemonSet, the bridge CNI configured
// on the nodes only.
func bridgeCluster(extra ...runtime.Object) *fake.Clientset {
	objs := []runtime.Object{testNode("worker-a"), testNode("worker-b"),
		ds("kube-system", "kube-proxy", "registry.k8s.io/kube-proxy:v1.34.4", nil)}
	return newFakeCluster(append(objs, extra...)...)
}

// cniProbeAccess sends the agents to the health agent and each probe pod
// to a real node probe (agent.ServeProbe, started when first reached,
// with the token from the run's Secret) reading its node's CNI directory.
type cniProbeAccess struct {
	staticAccess
	t        *testing.T
	cs       *fake.Clientset
	dirs     map[string]string // node → its /etc/cni/net.d
	kernels  map[string]string // node → the root of its fake /sys and /proc (none: nothing readable)
	mu       sync.Mutex
	released []string
}

func (a *cniProbeAccess) ControlOn(_ context.Context, p *corev1.Pod, port int) (string, error) {
	sec, err := a.cs.Tracker().Get(corev1.SchemeGroupVersion.WithResource("secrets"), p.Namespace, SecretName)
	if err != nil || port != agent.DefaultProbePort || p.Labels[LabelRole] != RoleProbe {
		a.t.Errorf("probe %s reached on port %d before the Secret exists (%v)", p.Name, port, err)
	}
	kernel := a.kernels[p.Spec.NodeName]
	if kernel == "" {
		kernel = a.t.TempDir()
	}
	control := "unix:" + filepath.Join(a.t.TempDir(), "probe.sock")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- agent.ServeProbe(ctx, agent.ProbeConfig{Control: control, Token: string(sec.(*corev1.Secret).Data[SecretKey]),
			Node: p.Spec.NodeName, CNIConfDir: a.dirs[p.Spec.NodeName], Kernel: nodeprobe.KernelPaths{Root: kernel}})
	}()
	a.t.Cleanup(func() { cancel(); <-done })
	return control, nil
}

func (a *cniProbeAccess) Release(p *corev1.Pod) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.released = append(a.released, p.Name)
}

// cniDirs makes a CNI directory per node holding the golden files named
// (testdata of the nodeprobe package).
func cniDirs(t *testing.T, files map[string]string) map[string]string {
	dirs := map[string]string{}
	for node, file := range files {
		dirs[node] = t.TempDir()
		b, err := os.ReadFile(filepath.Join("..", "..", "agent", "nodeprobe", "testdata", "cni", file))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dirs[node], file), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dirs
}

// probeCreates counts the node probe pods the CLI asked to create.
func probeCreates(cs *fake.Clientset) int {
	n := 0
	for _, a := range cs.Actions() {
		if c, ok := a.(k8stesting.CreateAction); ok && a.GetResource().Resource == "pods" {
			if p, ok := c.GetObject().(*corev1.Pod); ok && p.Labels[LabelRole] == RoleProbe {
				n++
			}
		}
	}
	return n
}

func openBridge(t *testing.T, cs *fake.Clientset, cfg Config, acc Access) *Target {
	t.Helper()
	tgt, err := Open(context.Background(), cfg, cs, acc, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := tgt.Close(); err != nil {
			t.Error(err)
		}
		assertClean(t, cs)
	})
	return tgt
}

// No CNI DaemonSet (the test cluster's bridge mode): the run deploys a
// node probe per node, reads the config each node's runtime loads, names
// the CNI from it, and deletes the probes before measuring.
func TestNodeCNIReadWithoutDaemonSet(t *testing.T) {
	cs := bridgeCluster()
	startKubelet(t, cs, testNS, healthy)
	h := startHealthAgent(t, cs, testNS)
	acc := &cniProbeAccess{staticAccess: staticAccess{addr: h.srv.URL}, t: t, cs: cs,
		dirs: cniDirs(t, map[string]string{"worker-a": "10-cnbk.conflist", "worker-b": "10-cnbk.conflist"})}
	cfg := testConfig("cni1")
	var progress bytes.Buffer
	cfg.Progress = &syncWriter{w: &progress}
	tgt := openBridge(t, cs, cfg, acc)
	cni := tgt.prov.CNI
	if cni.Plugin != "bridge" || cni.Source != "node CNI config "+acc.dirs["worker-a"]+"/10-cnbk.conflist on worker-a; node CNI config "+acc.dirs["worker-b"]+"/10-cnbk.conflist on worker-b" {
		t.Errorf("cni %q from %q", cni.Plugin, cni.Source)
	}
	if len(cni.NodeConfig) != 2 || cni.NodeConfig[1].Network != "cnbk-pods" || cni.KubeProxy == nil || len(cni.Components) != 1 {
		t.Errorf("node configs %+v, kube-proxy %+v", cni.NodeConfig, cni.KubeProxy)
	}
	// The same probes asked the kernels (nothing readable in this fake).
	if len(cni.NodeKernel) != 2 || !strings.HasSuffix(cni.Encryption, "; WireGuard support unknown: nodes worker-a, worker-b; IPsec support unknown: nodes worker-a, worker-b)") {
		t.Errorf("node kernels %+v, encryption %q", cni.NodeKernel, cni.Encryption)
	}
	d := tgt.Details()["cni"].(map[string]any)
	if d["plugin"] != "bridge" || d["node_config"].([]any)[0].(map[string]any)["plugins"].([]any)[0] != "bridge" {
		t.Errorf("details: %v", d)
	}
	if n := probeCreates(cs); n != 2 {
		t.Errorf("%d probe pods created, want one per node", n)
	}
	probes, _ := cs.CoreV1().Pods(testNS).List(context.Background(), metav1.ListOptions{LabelSelector: LabelRole + "=" + RoleProbe})
	if len(probes.Items) != 0 || len(acc.released) != 2 {
		t.Errorf("%d probe pods still there (released %v): they must not stay for the measurement", len(probes.Items), acc.released)
	}
	if !strings.Contains(progress.String(), "no CNI DaemonSet found: reading the nodes' CNI config with a node probe ... bridge on worker-a (10-cnbk.conflist: bridge)") {
		t.Errorf("progress:\n%s", progress.String())
	}
}

// Nodes that disagree are both recorded; one node's broken file is said.
func TestNodeCNIDisagree(t *testing.T) {
	for _, c := range []struct {
		files        map[string]string
		plugin, part string
	}{
		{map[string]string{"worker-a": "10-cnbk.conflist", "worker-b": "10-ptp.conf"}, "bridge on worker-a, ptp on worker-b", "(the nodes disagree)"},
		{map[string]string{"worker-a": "10-flannel.conflist", "worker-b": "10-broken.conflist"}, "flannel", "not read on worker-b: 10-broken.conflist: not a CNI config list: error parsing configuration list: unexpected end of JSON input"},
	} {
		cs := bridgeCluster()
		startKubelet(t, cs, testNS, healthy)
		h := startHealthAgent(t, cs, testNS)
		acc := &cniProbeAccess{staticAccess: staticAccess{addr: h.srv.URL}, t: t, cs: cs, dirs: cniDirs(t, c.files)}
		cfg := testConfig("cni2")
		cfg.Placements = []string{suite.PodToPodOtherNode}
		tgt := openBridge(t, cs, cfg, acc)
		if cni := tgt.prov.CNI; cni.Plugin != c.plugin || !strings.Contains(cni.Source, c.part) {
			t.Errorf("%v: cni %q from %q, want %q and %q", c.files, cni.Plugin, cni.Source, c.plugin, c.part)
		}
	}
}

// When the probe may not be deployed, none is created, the CNI stays
// unknown and the results say why; a refused probe does not fail the run.
func TestNodeCNIProbeNotAllowed(t *testing.T) {
	privileged := func(level string) runtime.Object {
		return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testNS, Labels: map[string]string{LabelPodSecurity: level}}}
	}
	forbidProbes := func(cs *fake.Clientset) {
		cs.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
			p := a.(k8stesting.CreateAction).GetObject().(*corev1.Pod)
			if p.Labels[LabelRole] != RoleProbe {
				return false, nil, nil
			}
			return true, nil, apierrors.NewForbidden(corev1.Resource("pods"), p.Name, errFromWebhook)
		})
	}
	for _, c := range []struct {
		name     string
		ns       runtime.Object
		mutate   func(*Config)
		plain    bool // staticAccess: cannot reach the probe's port
		refuse   bool
		creates  int
		wantWhy  string
		wantNote string
	}{
		{"flag off", nil, func(c *Config) { c.NoNodeCNIProbe = true }, false, false, 0, "--node-cni-probe=false", ""},
		{"baseline namespace", privileged("baseline"), nil, false, false, 0, "namespace " + testNS + " has pod-security.kubernetes.io/enforce=baseline, which rejects the privileged node probe", ""},
		{"access without the probe port", nil, nil, true, false, 0, "access test (one health server) cannot reach the node probe's port 5210", ""},
		{"refused by admission", privileged("privileged"), nil, false, true, 1, "creating the node probe cnibench-probe-node0 was refused: ", "no privileged pods here"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var objs []runtime.Object
			if c.ns != nil {
				objs = append(objs, c.ns)
			}
			cs := bridgeCluster(objs...)
			if c.refuse {
				forbidProbes(cs)
			}
			startKubelet(t, cs, testNS, healthy)
			h := startHealthAgent(t, cs, testNS)
			var acc Access = &cniProbeAccess{staticAccess: staticAccess{addr: h.srv.URL}, t: t, cs: cs, dirs: cniDirs(t, map[string]string{"worker-a": "10-cnbk.conflist", "worker-b": "10-cnbk.conflist"})}
			if c.plain {
				acc = &staticAccess{addr: h.srv.URL}
			}
			cfg := testConfig("cni3")
			cfg.Placements = []string{suite.PodToPodOtherNode}
			if c.mutate != nil {
				c.mutate(&cfg)
			}
			tgt := openBridge(t, cs, cfg, acc)
			cni := tgt.prov.CNI
			want := "no CNI DaemonSet found; the node's CNI config was not read: " + c.wantWhy
			if cni.Plugin != "unknown" || !strings.HasPrefix(cni.Source, want) || !strings.Contains(cni.Source, c.wantNote) || strings.Contains(cni.Source, "\n") {
				t.Errorf("cni %q from %q, want unknown from %q…%q", cni.Plugin, cni.Source, want, c.wantNote)
			}
			if n := probeCreates(cs); n != c.creates {
				t.Errorf("%d probe pods asked for, want %d", n, c.creates)
			}
		})
	}
}

const errFromWebhook = webhookError("admission webhook \"policy.example\" denied the request: no privileged pods here")

type webhookError string

func (e webhookError) Error() string { return string(e) }

// A sweep's probes are up anyway: the CNI config is read from them on
// every run, also where a DaemonSet named the CNI, and no other probe is
// created.
func TestNodeCNIFromSweepProbes(t *testing.T) {
	cs, acc := scaleCluster(t, nil, nil)
	tgt, err := Open(context.Background(), scaleConfig("cni4"), cs, acc, "")
	if err != nil {
		t.Fatal(err)
	}
	defer tgt.Close()
	cni := tgt.prov.CNI
	if cni.Plugin != "cilium" || cni.Source != "DaemonSet kube-system/cilium" || len(cni.NodeConfig) != 2 ||
		cni.NodeConfig[0].Node != "worker-a" || cni.NodeConfig[0].File != "05-cilium.conflist" {
		t.Errorf("cni %q from %q, node configs %+v", cni.Plugin, cni.Source, cni.NodeConfig)
	}
	if n := probeCreates(cs); n != 2 {
		t.Errorf("%d probe pods created, want the sweep's 2", n)
	}
}

// kernelRoot is a node's fake /sys and /proc: the golden kernel config
// (nodeprobe's testdata/kernel) as /proc/config.gz, and the modules
// named loaded.
func kernelRoot(t *testing.T, config string, loaded ...string) string {
	t.Helper()
	root := t.TempDir()
	b, err := os.ReadFile(filepath.Join("..", "..", "agent", "nodeprobe", "testdata", "kernel", config))
	if err != nil {
		t.Fatal(err)
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, _ = zw.Write(b)
	_ = zw.Close()
	for _, dir := range append([]string{"proc"}, loaded...) {
		if dir != "proc" {
			dir = filepath.Join("sys", "module", dir)
		}
		if err := os.MkdirAll(filepath.Join(root, dir), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "proc", "config.gz"), gz.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return root
}

// Where a DaemonSet names the CNI and its config leaves encryption off
// (the test cluster's Cilium), a node probe per node is deployed for a
// moment to ask each node's kernel whether it could encrypt: the
// encryption then says which nodes' kernels cannot do WireGuard or
// IPsec, the probes are gone before measuring, and Cilium stays named by
// its DaemonSet. With encryption on, or the probe not allowed, nothing
// is deployed and the encryption is the config's alone.
func TestNodeKernelEncryptionOnCilium(t *testing.T) {
	const fcConfig = "config-6.18.44-fc-v669" // the test cluster's kernel: no WireGuard, no ESP
	for _, c := range []struct {
		name    string
		keys    map[string]string // added to cilium-config
		noProbe bool
		kernels map[string]string // node → golden config, WireGuard loaded when suffixed "+wg"
		creates int
		want    string
	}{
		{"no WireGuard on the nodes", nil, false, map[string]string{"worker-a": fcConfig, "worker-b": fcConfig}, 2,
			`none (cilium enable-wireguard="", enable-ipsec=""; WireGuard unsupported on this kernel: nodes worker-a, worker-b; IPsec unsupported on this kernel: nodes worker-a, worker-b)`},
		{"one node has it loaded", nil, false, map[string]string{"worker-a": fcConfig + "+wg", "worker-b": fcConfig}, 2,
			`none (cilium enable-wireguard="", enable-ipsec=""; WireGuard unsupported on this kernel: node worker-b; WireGuard available on this kernel: node worker-a; IPsec unsupported on this kernel: nodes worker-a, worker-b)`},
		{"nothing readable", nil, false, map[string]string{}, 2,
			`none (cilium enable-wireguard="", enable-ipsec=""; WireGuard support unknown: nodes worker-a, worker-b; IPsec support unknown: nodes worker-a, worker-b)`},
		{"encryption on", map[string]string{"enable-wireguard": "true"}, false, nil, 0, "wireguard (cilium enable-wireguard=true)"},
		{"probe not allowed", nil, true, nil, 0, `none (cilium enable-wireguard="", enable-ipsec="")`},
	} {
		t.Run(c.name, func(t *testing.T) {
			cs := twoNodeCluster()
			if len(c.keys) > 0 {
				gvr := corev1.SchemeGroupVersion.WithResource("configmaps")
				obj, _ := cs.Tracker().Get(gvr, "kube-system", "cilium-config")
				cm := obj.(*corev1.ConfigMap)
				for k, v := range c.keys {
					cm.Data[k] = v
				}
				if err := cs.Tracker().Update(gvr, cm, "kube-system"); err != nil {
					t.Fatal(err)
				}
			}
			startKubelet(t, cs, testNS, healthy)
			h := startHealthAgent(t, cs, testNS)
			acc := &cniProbeAccess{staticAccess: staticAccess{addr: h.srv.URL}, t: t, cs: cs, kernels: map[string]string{},
				dirs: cniDirs(t, map[string]string{"worker-a": "05-cilium.conflist", "worker-b": "05-cilium.conflist"})}
			for node, config := range c.kernels {
				config, wg := strings.CutSuffix(config, "+wg")
				var loaded []string
				if wg {
					loaded = []string{"wireguard"}
				}
				acc.kernels[node] = kernelRoot(t, config, loaded...)
			}
			cfg := testConfig("kern1")
			cfg.NoNodeCNIProbe = c.noProbe
			var progress bytes.Buffer
			cfg.Progress = &syncWriter{w: &progress}
			tgt := openBridge(t, cs, cfg, acc)
			cni := tgt.prov.CNI
			if cni.Encryption != c.want || cni.Plugin != "cilium" || cni.Source != "DaemonSet kube-system/cilium" {
				t.Errorf("cni %q from %q, encryption\n got %q\nwant %q", cni.Plugin, cni.Source, cni.Encryption, c.want)
			}
			if n := probeCreates(cs); n != c.creates {
				t.Errorf("%d probe pods created, want %d", n, c.creates)
			}
			probes, _ := cs.CoreV1().Pods(testNS).List(context.Background(), metav1.ListOptions{LabelSelector: LabelRole + "=" + RoleProbe})
			if len(probes.Items) != 0 {
				t.Errorf("%d probe pods still there: they must not stay for the measurement", len(probes.Items))
			}
			if c.creates == 0 {
				return
			}
			// Each node's evidence is in the details; the progress says it.
			d := tgt.Details()["cni"].(map[string]any)
			nk, _ := d["node_kernel"].([]any)
			if len(nk) != 2 || len(cni.NodeConfig) != 2 {
				t.Fatalf("node_kernel %v, node configs %+v", d["node_kernel"], cni.NodeConfig)
			}
			if c.kernels["worker-a"] == fcConfig {
				k := nk[0].(map[string]any)
				if wg := k["wireguard"].(map[string]any); k["node"] != "worker-a" || wg["support"] != "unsupported" || wg["detail"] != "CONFIG_WIREGUARD is not set (/proc/config.gz)" {
					t.Errorf("node_kernel[0] %v", k)
				}
			}
			if !strings.Contains(progress.String(), `encryption none (cilium enable-wireguard="", enable-ipsec=""): reading the nodes' kernel support for encryption with a node probe ... WireGuard `) {
				t.Errorf("progress:\n%s", progress.String())
			}
		})
	}
}
