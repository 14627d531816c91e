// Package cluster drives the built cnibench binary with --target k8s
// against a real Kubernetes cluster: the two-node one scripts/test-cluster.sh
// brings up on this machine (real API server, kubelets, containerd, runc,
// the bridge CNI, kube-proxy in iptables or nftables mode). Without
// CNB_CLUSTER_KUBECONFIG every test skips: run them with
//
//	sudo ./scripts/test-cluster.sh
package cluster

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/engine"
	"github.com/cnibench/cnibench/engine/fortioload"
	"github.com/cnibench/cnibench/engine/httpload"
	"github.com/cnibench/cnibench/results"
)

// env is the cluster the tests run against, set by scripts/test-cluster.sh.
type env struct {
	kubeconfig     string // cluster admin
	userKubeconfig string // a user with no rights of its own (least-privilege test)
	user           string
	bin            string // the cnibench binary
	image          string // the agent image, imported on every node
	kubectl        string
	proxyMode      string // kube-proxy's mode: iptables or nftables ("none" on Cilium)
	cni            string // the cluster's CNI mode: bridge (with kube-proxy) or cilium (kube-proxy replacement)
	ruleNetNS      string // a node's network namespace (name under /run/netns) whose kube-proxy rules the fidelity test reads
	clusterCIDR    string // kube-proxy's --cluster-cidr
	serviceCIDR    string // the API server's Service range
}

func getEnv(t *testing.T) *env {
	t.Helper()
	e := &env{
		kubeconfig:     os.Getenv("CNB_CLUSTER_KUBECONFIG"),
		userKubeconfig: os.Getenv("CNB_CLUSTER_USER_KUBECONFIG"),
		user:           os.Getenv("CNB_CLUSTER_USER"),
		bin:            os.Getenv("CNB_CLUSTER_BIN"),
		image:          os.Getenv("CNB_CLUSTER_IMAGE"),
		kubectl:        os.Getenv("CNB_CLUSTER_KUBECTL"),
		proxyMode:      os.Getenv("CNB_CLUSTER_PROXY_MODE"),
		cni:            envOr("CNB_CLUSTER_CNI", "bridge"),
		ruleNetNS:      os.Getenv("CNB_CLUSTER_RULE_NETNS"),
		clusterCIDR:    os.Getenv("CNB_CLUSTER_CIDR"),
		serviceCIDR:    os.Getenv("CNB_CLUSTER_SERVICE_CIDR"),
	}
	if e.kubeconfig == "" {
		t.Skip("no cluster: CNB_CLUSTER_KUBECONFIG is unset (run sudo ./scripts/test-cluster.sh)")
	}
	for name, v := range map[string]string{"CNB_CLUSTER_BIN": e.bin, "CNB_CLUSTER_IMAGE": e.image,
		"CNB_CLUSTER_KUBECTL": e.kubectl, "CNB_CLUSTER_PROXY_MODE": e.proxyMode, "CNB_CLUSTER_RULE_NETNS": e.ruleNetNS,
		"CNB_CLUSTER_CIDR": e.clusterCIDR, "CNB_CLUSTER_SERVICE_CIDR": e.serviceCIDR} {
		if v == "" {
			t.Fatalf("CNB_CLUSTER_KUBECONFIG is set but %s is not", name)
		}
	}
	if e.cni != "bridge" && e.cni != "cilium" && e.cni != "flannel" {
		t.Fatalf("CNB_CLUSTER_CNI=%q: bridge, cilium or flannel", e.cni)
	}
	return e
}

// cilium says whether the cluster runs Cilium (no kube-proxy).
func (e *env) cilium() bool { return e.cni == "cilium" }

// datapath is the Service datapath the node probes must find: Cilium's
// LB maps, or kube-proxy's rules in its mode.
func (e *env) datapath() string {
	if e.cilium() {
		return "cilium"
	}
	return "kube-proxy-" + e.proxyMode
}

// needCNI skips a test written for another CNI mode of the cluster.
func (e *env) needCNI(t *testing.T, cni string) {
	t.Helper()
	if e.cni != cni {
		t.Skipf("needs the %s cluster (CNB_CLUSTER_CNI=%s), this one is %s", cni, cni, e.cni)
	}
}

// result is a finished cnibench or kubectl command.
type result struct {
	stdout, stderr string
	code           int
}

// cnibench runs the binary against the cluster with the given kubeconfig.
func (e *env) cnibench(t *testing.T, kubeconfig string, args ...string) result {
	t.Helper()
	return run(t, exec.Command(e.bin, append(args, "--kubeconfig", kubeconfig)...))
}

// k runs kubectl as the admin.
func (e *env) k(t *testing.T, args ...string) result {
	t.Helper()
	return run(t, exec.Command(e.kubectl, append([]string{"--kubeconfig", e.kubeconfig}, args...)...))
}

func run(t *testing.T, c *exec.Cmd) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	c.Stdout, c.Stderr = &stdout, &stderr
	start := time.Now()
	err := c.Run()
	r := result{stdout: stdout.String(), stderr: stderr.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%v: %v", c.Args, err)
	}
	t.Logf("%s (%s, exit %d)", strings.Join(c.Args, " "), time.Since(start).Round(time.Millisecond), r.code)
	return r
}

// mustOK fails the test with the command's output when it did not exit 0.
func mustOK(t *testing.T, r result, what string) {
	t.Helper()
	if r.code != 0 {
		t.Fatalf("%s: exit %d\nstdout:\n%s\nstderr:\n%s", what, r.code, r.stdout, tail(r.stderr, 60))
	}
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// grantUser applies what `cnibench k8s rbac` (with more flags, e.g.
// --allow-cluster-changes) prints for the least-privilege user in
// namespace ns, removed when the test ends.
func (e *env) grantUser(t *testing.T, ns string, more ...string) {
	t.Helper()
	if e.userKubeconfig == "" || e.user == "" {
		t.Fatal("CNB_CLUSTER_USER_KUBECONFIG and CNB_CLUSTER_USER must be set")
	}
	rbac := run(t, exec.Command(e.bin, append([]string{"k8s", "rbac", "--user", e.user, "--namespace", ns}, more...)...))
	mustOK(t, rbac, "k8s rbac")
	manifest := filepath.Join(t.TempDir(), "rbac.yaml")
	writeFile(t, manifest, rbac.stdout)
	mustOK(t, e.k(t, "apply", "-f", manifest), "kubectl apply rbac")
	t.Cleanup(func() { e.k(t, "delete", "-f", manifest, "--ignore-not-found", "--wait=true") })
}

// leftovers lists every object of ours in the cluster: anything labelled
// managed-by cnibench, in any namespace, plus the run's namespace itself
// when the run created it (wantNamespace false).
func (e *env) leftovers(t *testing.T, namespace string, wantNamespace bool) []string {
	t.Helper()
	r := e.k(t, "get", "pods,services,endpointslices,secrets,configmaps,daemonsets,networkpolicies", "-A",
		"-l", "app.kubernetes.io/managed-by=cnibench", "-o", "name")
	if r.code != 0 {
		t.Fatalf("kubectl get: %s", r.stderr)
	}
	left := strings.Fields(r.stdout)
	ns := e.k(t, "get", "namespace", namespace, "-o", "name", "--ignore-not-found")
	if has := strings.TrimSpace(ns.stdout) != ""; has != wantNamespace {
		left = append(left, "namespace "+namespace+" present="+map[bool]string{true: "yes", false: "no"}[has])
	}
	return left
}

// waitGone polls until nothing of ours is left (deletion of pods and
// namespaces completes asynchronously after the CLI returned), or fails
// naming what remains.
func (e *env) waitGone(t *testing.T, namespace string, wantNamespace bool) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		left := e.leftovers(t, namespace, wantNamespace)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("objects of ours left in the cluster: %v", left)
		}
		time.Sleep(time.Second)
	}
}

func readResults(t *testing.T, dir string) *results.Run {
	t.Helper()
	r, err := results.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// checkSamples fails for every failed, skipped or empty sample; it returns
// the placements seen.
func checkSamples(t *testing.T, r *results.Run) map[string]bool {
	t.Helper()
	placements := map[string]bool{}
	for _, res := range r.Results {
		name := res.Test + " " + res.Placement.Name()
		placements[res.Placement.Name()] = true
		if res.Skipped != "" {
			t.Errorf("%s skipped: %s", name, res.Skipped)
			continue
		}
		if len(res.Samples) == 0 {
			t.Errorf("%s: no samples", name)
		}
		for _, s := range res.Samples {
			if s.Error != "" {
				t.Errorf("%s: sample failed: %s", name, s.Error)
				continue
			}
			checkSample(t, name, res.Test, s.Result)
		}
	}
	return placements
}

// checkSample fails for a sample that measured nothing: an HTTP or fortio
// sample without a request OK, an engine sample without a rate or throughput, or
// a TCP one with errors.
func checkSample(t *testing.T, name, test string, result any) {
	t.Helper()
	switch r := result.(type) {
	case *httpload.Result:
		if r.RPS <= 0 || r.OK == 0 {
			t.Errorf("%s: empty HTTP sample: %d of %d requests OK, %.0f/s", name, r.OK, r.Requests, r.RPS)
		}
	case *fortioload.Result:
		if r.RPS <= 0 || r.OK == 0 {
			t.Errorf("%s: empty fortio sample: %d of %d requests OK, %.0f/s", name, r.OK, r.Requests, r.RPS)
		}
	case *engine.Result:
		switch {
		case r.RatePerSec <= 0 && r.ThroughputBitsSec <= 0:
			t.Errorf("%s: sample without a rate or throughput", name)
		case strings.HasPrefix(test, "TCP") && r.Errors > 0:
			// A TCP transaction between two pods of an idle local
			// cluster does not fail; a refused connection meant the
			// run measured a Service the proxy had not programmed.
			t.Errorf("%s: %d errors %v", name, r.Errors, r.ErrorsByCause)
		}
	case nil:
		t.Errorf("%s: sample without a result", name)
	default:
		t.Errorf("%s: sample of an unexpected kind %T", name, r)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
