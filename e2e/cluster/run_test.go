package cluster

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cnibench/cnibench/agent/nodeprobe"
	"github.com/cnibench/cnibench/engine"
	"github.com/cnibench/cnibench/results"
)

// The placements a default cluster run measures (pod-to-service joins them
// by default: every cluster has a Service datapath).
var wantPlacements = []string{"pod-to-pod/same-node", "pod-to-pod/other-node",
	"host-to-host/other-node", "pod-to-service/same-node", "pod-to-service/other-node"}

// The quick profile on every placement, short samples: every sample
// succeeds, the provenance names kube-proxy in the mode it runs in, and
// nothing of the run is left in the cluster afterwards.
func TestQuickEveryPlacement(t *testing.T) {
	e := getEnv(t)
	out := filepath.Join(t.TempDir(), "run")
	r := e.cnibench(t, e.kubeconfig, "run", "--target", "k8s", "--image", e.image,
		"--profile", "quick", "--duration", "2s", "--warmup", "500ms", "--out", out)
	mustOK(t, r, "quick run")
	res := readResults(t, out)
	if res.Target.Kind != "k8s" {
		t.Errorf("target kind %q", res.Target.Kind)
	}
	seen := checkSamples(t, res)
	for _, p := range wantPlacements {
		if !seen[p] {
			t.Errorf("placement %s not measured (have %v)", p, seen)
		}
	}
	e.checkCNIProvenance(t, res)
	e.waitGone(t, "cnibench", false)
}

// checkCNIProvenance: the results name the cluster's datapath as it runs:
// kube-proxy in its mode on the bridge cluster; on Flannel its DaemonSet,
// version and backend beside kube-proxy; on Cilium its DaemonSet, version
// and the mode-defining keys of cilium-config, and no kube-proxy; on all,
// encryption off and what the nodes' kernels say of it, and no mesh in the
// path.
func (e *env) checkCNIProvenance(t *testing.T, res *results.Run) {
	t.Helper()
	var details struct {
		CNI struct {
			Plugin, Source string
			Components     []struct{ Plugin, DaemonSet, Version string }
			KubeProxy      *struct{ Mode string } `json:"kube_proxy"`
			Cilium         *struct {
				RoutingMode          string `json:"routing_mode"`
				KubeProxyReplacement string `json:"kube_proxy_replacement"`
				EnableHubble         string `json:"enable_hubble"`
			}
			Encryption     string
			FlannelBackend string `json:"flannel_backend"`
			NodeConfig     []struct {
				Node, File, Network string
				Plugins             []string
			} `json:"node_config"`
			NodeKernel []nodeKernel `json:"node_kernel"`
		} `json:"cni"`
		Mesh *struct{ Summary string } `json:"mesh"`
	}
	raw, _ := json.Marshal(res.Target.Details)
	if err := json.Unmarshal(raw, &details); err != nil {
		t.Fatalf("target.details: %v", err)
	}
	c := details.CNI
	// No mesh on the test cluster: nothing in the path but the CNI (and
	// Cilium's own proxy, which its config turns off).
	wantMesh := "no sidecar, ztunnel capture or waypoint in the path"
	if e.cilium() {
		wantMesh += "; Cilium's L7 proxy: off (enable-l7-proxy=false)"
	}
	if details.Mesh == nil || details.Mesh.Summary != wantMesh {
		t.Errorf("mesh %+v, want %q", details.Mesh, wantMesh)
	}
	if e.cni == "flannel" {
		if kp := c.KubeProxy; kp == nil || kp.Mode != e.proxyMode {
			t.Errorf("provenance does not name kube-proxy in %s mode: %s", e.proxyMode, raw)
		}
		var fl []string
		for _, comp := range c.Components {
			if comp.Plugin == "flannel" {
				fl = append(fl, comp.DaemonSet+" "+comp.Version)
			}
		}
		if c.Plugin != "flannel" || strings.Join(fl, ",") != "kube-flannel-ds v0.28.10" || c.FlannelBackend != "vxlan" ||
			!strings.HasPrefix(c.Encryption, "none (flannel backend vxlan") {
			t.Errorf("provenance does not name Flannel v0.28.10 (DaemonSet kube-flannel-ds, VXLAN, no encryption): %s", raw)
		}
		checkKernelEncryption(t, c.Encryption, c.NodeKernel)
		return
	}
	if !e.cilium() {
		if kp := c.KubeProxy; kp == nil || kp.Mode != e.proxyMode || len(c.Components) != 1 || c.Components[0].Plugin != "kube-proxy" {
			t.Errorf("provenance does not name kube-proxy in %s mode: %s", e.proxyMode, raw)
		}
		// The bridge CNI runs no DaemonSet: the node probes name it from the
		// config each node's containerd loads (scripts/cluster/net.sh cni_conf).
		wantSource := "node CNI config /etc/cni/net.d/10-cnbk.conflist on cnbk-node0; node CNI config /etc/cni/net.d/10-cnbk.conflist on cnbk-node1"
		if c.Plugin != "bridge" || c.Source != wantSource || len(c.NodeConfig) != 2 ||
			c.NodeConfig[0].Network != "cnbk-pods" || strings.Join(c.NodeConfig[1].Plugins, ",") != "bridge" {
			t.Errorf("cni %q from %q, node configs %+v; want bridge from %q", c.Plugin, c.Source, c.NodeConfig, wantSource)
		}
		if !strings.HasPrefix(c.Encryption, "unknown (bridge: ") {
			t.Errorf("encryption %q, want unknown for the bridge", c.Encryption)
		}
		checkKernelEncryption(t, c.Encryption, c.NodeKernel)
		return
	}
	cil := c.Cilium
	if c.Plugin != "cilium" || len(c.Components) != 1 || c.Components[0].DaemonSet != "cilium" || c.Components[0].Version != "v1.20.2" ||
		c.KubeProxy != nil || cil == nil || cil.KubeProxyReplacement != "true" || cil.EnableHubble != "true" ||
		(cil.RoutingMode != "native" && cil.RoutingMode != "tunnel") || !strings.HasPrefix(c.Encryption, "none") {
		t.Errorf("provenance does not name Cilium v1.20.2 with kube-proxy replacement, Hubble and no encryption: %s", raw)
	}
	// The DaemonSet named Cilium and its config leaves encryption off: the
	// node probes asked the kernels whether they could encrypt.
	if !strings.HasPrefix(c.Encryption, `none (cilium enable-wireguard="", enable-ipsec=""; `) {
		t.Errorf("encryption %q, want none from cilium-config and the kernels' word", c.Encryption)
	}
	checkKernelEncryption(t, c.Encryption, c.NodeKernel)
}

// nodeKernel is one node's kernel in the results (cni.node_kernel).
type nodeKernel struct {
	Node             string
	WireGuard, IPsec nodeprobe.KernelSupport
	Error            string
}

// checkKernelEncryption: the test cluster's nodes are namespaces of this
// machine, so their kernel is the one this test runs on. Read here by
// the node probe's own code with the probe's view (this machine's /sys
// and /proc, no module tree), it decides what the encryption line must
// say of WireGuard and IPsec on both nodes ("WireGuard unsupported on
// this kernel: nodes cnbk-node0, cnbk-node1" on a kernel without it),
// and what each node's record holds.
func checkKernelEncryption(t *testing.T, encryption string, got []nodeKernel) {
	t.Helper()
	host := nodeprobe.ReadKernelEncryption(nodeprobe.ProbeKernelPaths)
	t.Logf("this machine's kernel %s: WireGuard %s (%s), IPsec %s (%s)", host.Release,
		host.WireGuard.Support, host.WireGuard.Detail, host.IPsec.Support, host.IPsec.Detail)
	says := map[string]string{nodeprobe.KernelUnsupported: " unsupported on this kernel: ",
		nodeprobe.KernelAvailable: " available on this kernel: ", nodeprobe.KernelUnknown: " support unknown: "}
	for _, f := range []struct {
		name string
		want nodeprobe.KernelSupport
		of   func(nodeKernel) nodeprobe.KernelSupport
	}{
		{"WireGuard", host.WireGuard, func(k nodeKernel) nodeprobe.KernelSupport { return k.WireGuard }},
		{"IPsec", host.IPsec, func(k nodeKernel) nodeprobe.KernelSupport { return k.IPsec }},
	} {
		if want := f.name + says[f.want.Support] + "nodes cnbk-node0, cnbk-node1"; !strings.Contains(encryption, want) {
			t.Errorf("encryption %q does not say %q (this machine's kernel: %s)", encryption, want, f.want.Detail)
		}
		if len(got) != 2 {
			continue
		}
		for _, k := range got {
			if s := f.of(k); k.Error != "" || s != f.want {
				t.Errorf("node %s: %s %+v (error %q), want this machine's %+v", k.Node, f.name, s, k.Error, f.want)
			}
		}
	}
	if len(got) != 2 || got[0].Node != "cnbk-node0" || got[1].Node != "cnbk-node1" {
		t.Errorf("node_kernel %+v, want cnbk-node0 and cnbk-node1", got)
	}
}

// A user with only what `cnibench k8s rbac` grants runs the suite; the same
// user cannot read anything else.
func TestLeastPrivilegeUser(t *testing.T) {
	e := getEnv(t)
	const ns = "cnb-rbac"
	e.grantUser(t, ns)

	// Nothing beyond the printed rules: no Secrets elsewhere, no writes to nodes.
	for _, args := range [][]string{{"get", "secrets", "-n", "kube-system"}, {"label", "node", "cnbk-node0", "x=y"}} {
		r := run(t, exec.Command(e.kubectl, append([]string{"--kubeconfig", e.userKubeconfig}, args...)...))
		if r.code == 0 || !strings.Contains(r.stderr, "Forbidden") && !strings.Contains(r.stderr, "forbidden") {
			t.Errorf("%s may %v (exit %d): %s", e.user, args, r.code, r.stderr)
		}
	}

	out := filepath.Join(t.TempDir(), "run")
	r := e.cnibench(t, e.userKubeconfig, "run", "--target", "k8s", "--image", e.image, "--namespace", ns,
		"--tests", "TCP_RR,TCP_STREAM", "--duration", "1s", "--warmup", "0s", "--out", out)
	mustOK(t, r, "run as "+e.user)
	seen := checkSamples(t, readResults(t, out))
	for _, p := range wantPlacements {
		if !seen[p] {
			t.Errorf("placement %s not measured as %s", p, e.user)
		}
	}
	e.waitGone(t, ns, true) // the admin's namespace stays
}

// startRun starts a long run in the background and returns once it
// measures (its agents ready and the CLI past creating them), so a signal
// lands with the run's objects in the cluster.
func (e *env) startRun(t *testing.T, out string) (*exec.Cmd, *syncBuffer) {
	t.Helper()
	c := exec.Command(e.bin, "run", "--target", "k8s", "--kubeconfig", e.kubeconfig, "--image", e.image,
		"--tests", "TCP_RR", "--placements", "pod-to-pod/other-node", "--duration", "60s", "--out", out)
	stderr := &syncBuffer{}
	c.Stdout, c.Stderr = stderr, stderr
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Process.Kill(); c.Wait() })
	created := regexp.MustCompile(`creating \d+ agent pods .* ready in`)
	deadline := time.Now().Add(3 * time.Minute)
	for !created.MatchString(stderr.String()) {
		if time.Now().After(deadline) {
			t.Fatalf("run not measuring after 3 min; cnibench said:\n%s", tail(stderr.String(), 40))
		}
		time.Sleep(200 * time.Millisecond)
	}
	return c, stderr
}

// syncBuffer collects a process's output while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Ctrl-C mid-run: the CLI removes every object of the run before it exits.
func TestSIGINTCleansUp(t *testing.T) {
	e := getEnv(t)
	c, stderr := e.startRun(t, filepath.Join(t.TempDir(), "run"))
	if err := c.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	select {
	case err := <-done:
		if err == nil {
			t.Errorf("interrupted run exited 0")
		}
	case <-time.After(2 * time.Minute):
		t.Fatalf("run did not exit 2 min after SIGINT:\n%s", tail(stderr.String(), 40))
	}
	t.Logf("cnibench said: %s", tail(stderr.String(), 2))
	if !strings.Contains(stderr.String(), "interrupted") {
		t.Errorf("stderr does not say interrupted:\n%s", tail(stderr.String(), 20))
	}
	// The CLI waits until its objects are gone before it exits.
	if left := e.leftovers(t, "cnibench", false); len(left) > 0 {
		t.Errorf("left after SIGINT: %v", left)
	}
}

// kill -9 mid-run leaves the objects; `cnibench k8s cleanup` removes them.
func TestSIGKILLThenCleanup(t *testing.T) {
	e := getEnv(t)
	c, _ := e.startRun(t, filepath.Join(t.TempDir(), "run"))
	c.Process.Kill()
	c.Wait()
	if left := e.leftovers(t, "cnibench", false); len(left) == 0 {
		t.Fatal("SIGKILL left nothing to clean up: the test did not kill mid-run")
	}
	mustOK(t, e.cnibench(t, e.kubeconfig, "k8s", "cleanup"), "k8s cleanup")
	e.waitGone(t, "cnibench", false)
}

// The Service-scale sweep through the real API server (every node's
// kube-proxy verified by the node probes), 0 → 1,000 Services × 4
// endpoints by default, CNB_CLUSTER_SWEEP_STEPS (e.g. 0,1000,10000) for
// more: every step verified on both nodes with a per-Service programming
// latency, every Service removed, nothing left; the pace (create and sync,
// removal) is logged beside issue 12's (10,000 in 3 and 2 minutes).
func TestServiceScaleSweep(t *testing.T) {
	e := getEnv(t)
	sweepSteps := strings.Split(envOr("CNB_CLUSTER_SWEEP_STEPS", "0,1000"), ",")
	largest, err := strconv.Atoi(sweepSteps[len(sweepSteps)-1])
	if err != nil || largest <= 0 {
		t.Fatalf("CNB_CLUSTER_SWEEP_STEPS=%v: want ascending Service counts, the last > 0", sweepSteps)
	}
	out := filepath.Join(t.TempDir(), "run")
	r := e.cnibench(t, e.kubeconfig, "run", "--target", "k8s", "--image", e.image, "--tests", "service-scale",
		"--scale-steps", strings.Join(sweepSteps, ","), "--rounds", "1", "--duration", "1s", "--warmup", "0s", "--out", out)
	mustOK(t, r, "service-scale sweep")
	res := readResults(t, out)
	checkSamples(t, res)
	if len(res.Sweeps) != 1 {
		t.Fatalf("%d sweeps, want 1", len(res.Sweeps))
	}
	sw := res.Sweeps[0]
	if sw.Datapath != e.datapath() || sw.Error != "" || sw.Stopped != "" {
		t.Errorf("sweep datapath %q error %q stopped %q", sw.Datapath, sw.Error, sw.Stopped)
	}
	var (
		steps   []string
		created time.Duration // API writes and node sync of every step: 0 → largest
	)
	for _, st := range sw.Steps {
		steps = append(steps, strconv.Itoa(st.Services))
		if st.Error != "" {
			t.Errorf("step %d: %s", st.Services, st.Error)
		}
		if st.Sync == nil || st.Sync.Mode != "node" || len(st.Sync.Nodes) != 2 {
			t.Errorf("step %d: not verified on both nodes by their probes: %+v", st.Services, st.Sync)
			continue
		}
		created += st.Sync.APIWrites + st.Sync.NodeSync
		lat := st.Sync.Latency
		t.Logf("step %d (%s): %d API writes in %s, node sync %s, per-Service latency %+v",
			st.Services, e.datapath(), st.Sync.Writes, st.Sync.APIWrites, st.Sync.NodeSync, lat)
		if st.Services > 0 && (lat == nil || lat.Services == 0 || lat.P50 <= 0 || lat.P99 < lat.P50) {
			t.Errorf("step %d: no per-Service programming latency: %+v", st.Services, lat)
		}
		for _, n := range st.Sync.Nodes {
			if n.Mode != "node" || n.Services < st.Services || n.Endpoints < 4*st.Services {
				t.Errorf("step %d: node %s read in mode %q (%s) holds %d Services, %d endpoints", st.Services, n.Node, n.Mode, n.Datapath, n.Services, n.Endpoints)
			}
		}
	}
	if strings.Join(steps, ",") != strings.Join(sweepSteps, ",") {
		t.Errorf("steps %v, want %v", steps, sweepSteps)
	}
	var details struct {
		ServiceScale struct {
			Deleted *struct {
				Services int
				Time     time.Duration
			}
		} `json:"service_scale"`
	}
	raw, _ := json.Marshal(res.Target.Details)
	if err := json.Unmarshal(raw, &details); err != nil {
		t.Fatalf("target.details: %v", err)
	}
	d := details.ServiceScale.Deleted
	if d == nil || d.Services != largest {
		t.Errorf("removal of the %d Services: %+v", largest, d)
	} else {
		// The pace is logged, not asserted: speed goals are benchmarks'
		// (a shared 2-core machine), and docs/k8s.md records them.
		t.Logf("created and synced %d Services in %s (issue 12's pace: %s), removed them in %s (%s)", largest, created,
			time.Duration(largest)*18*time.Millisecond, d.Time, time.Duration(largest)*12*time.Millisecond)
	}
	e.waitGone(t, "cnibench", false)
}

// Five rounds of TCP_CRR from pod to pod across nodes, with the agents'
// pod sysctls: the rate holds and no sample ran out of ephemeral ports.
// What used to break it is direct to check: TIME_WAIT piling up on the
// client (now the server closes first, as netserver, so the client's
// namespace keeps next to none) and the rounds collapsing one after the
// other as the ports ran out (2.7k, then 323-469/s: 0.12-0.17×). A
// collapse lasts, a busy machine's dip does not: the better of the last
// two rounds must be at least half the first. On Cilium (Hubble on) the
// rounds also dip without running out of anything (2132 → 1420 conn/s in
// CI on 2026-12-03). The agents take 0.9-1 of this machine's 2 cores in
// every round, so they set the level, not the dip; with Hubble off they
// take 0.06-0.08, the rate is 1.75× higher and still dips (to 0.7× its
// best): BENCHMARKS.md, "Cilium's TCP_CRR over rounds". Each round's
// client CPU and the datapath's cores (the kubelet's counters) are logged
// beside its rate.
func TestTCPCRRHoldsOverRounds(t *testing.T) {
	e := getEnv(t)
	out := filepath.Join(t.TempDir(), "run")
	r := e.cnibench(t, e.kubeconfig, "run", "--target", "k8s", "--image", e.image, "--tests", "TCP_CRR",
		"--placements", "pod-to-pod/other-node", "--rounds", "5", "--duration", "4s", "--warmup", "1s",
		"--datapath-usage", "kubelet", "--out", out)
	mustOK(t, r, "TCP_CRR × 5 rounds")
	res := readResults(t, out)
	checkSamples(t, res)
	if len(res.Results) != 1 || len(res.Results[0].Samples) != 5 {
		t.Fatalf("want 1 result of 5 samples, have %d results", len(res.Results))
	}
	var rates []float64
	for _, s := range res.Results[0].Samples {
		e, ok := s.Result.(*engine.Result)
		if !ok || e == nil {
			t.Fatalf("round %d: no engine result (%T)", s.Round, s.Result)
		}
		if e.PortExhaustion || e.Stalled {
			t.Errorf("round %d: port exhaustion %v, stalled %v, errors %v", s.Round, e.PortExhaustion, e.Stalled, e.ErrorsByCause)
		}
		if tw := e.ClientTimeWait; tw == nil || *tw > 100 {
			t.Errorf("round %d: client's TIME_WAIT sockets %v (want ≤ 100: the server closes first)", s.Round, tw)
		}
		rates = append(rates, e.RatePerSec)
		t.Logf("round %d: %.0f conn/s, client CPU %.2f s user + %.2f s sys, datapath %s", s.Round, e.RatePerSec,
			e.ClientCPUUserSec, e.ClientCPUSysSec, datapathCores(s.DatapathUsage))
	}
	t.Logf("TCP_CRR rounds (conn/s): %.0f", rates)
	if last := max(rates[3], rates[4]); last < 0.5*rates[0] {
		t.Errorf("TCP_CRR fell from %.0f to %.0f conn/s over 5 rounds (want the better of the last two ≥ 0.5× the first: a collapse)", rates[0], last)
	}
	e.waitGone(t, "cnibench", false)
}

// datapathCores says what the datapath's containers used during a sample,
// e.g. "0.92 cores (cilium@cnbk-node0 0.30, cilium@cnbk-node1 0.62)".
func datapathCores(u *results.DatapathUsage) string {
	if u == nil {
		return "not read"
	}
	var parts []string
	for _, c := range u.Components {
		parts = append(parts, fmt.Sprintf("%s@%s %.2f", c.Plugin, c.Node, c.Cores))
	}
	return fmt.Sprintf("%.2f cores (%s)", u.Cores, strings.Join(parts, ", "))
}

// envOr is the environment variable k, or def when it is unset.
func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}
