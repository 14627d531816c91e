package cluster

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/results"
)

// The security profile as twins of the Cilium cluster, 5 short rounds,
// by the least-privilege user with `k8s rbac --allow-cluster-changes`:
// the policy twin (Cilium enforces NetworkPolicy) and the flows twin
// (Hubble switched through cilium-config and a restart of the agents) are
// measured, every switch proved and recorded (policy: the denied prober
// dropped; Hubble: Disabled, or Ok with seen-flows rising by the probe's
// connections); the L7 questions are not measured, with the cluster's
// reason (no L7 proxy); every sample measured; enable-hubble is back as it
// was, without cnibench's record, Cilium rolled out; nothing of the run
// is left.
func TestSecurityTwinsOnCilium(t *testing.T) {
	e := getEnv(t)
	e.needCNI(t, "cilium")
	const ns = "cnb-sec"
	e.grantUser(t, ns, "--allow-cluster-changes")
	before := e.ciliumConfig(t)
	out := filepath.Join(t.TempDir(), "run")
	r := e.cnibench(t, e.userKubeconfig, "run", "--target", "k8s", "--image", e.image, "--namespace", ns, "--profile", "security",
		"--allow-cluster-changes", "--rounds", "5", "--duration", "1s", "--warmup", "200ms", "--out", out)
	mustOK(t, r, "run --profile security")
	res := readResults(t, out)
	checkSamples(t, res)
	tw := res.Twins
	if tw == nil {
		t.Fatal("results have no twins record")
	}
	t.Logf("design: %s", tw.Design)
	parts := map[string]results.TwinPart{}
	for _, p := range tw.Parts {
		parts[p.Part] = p
		for _, s := range p.Switches {
			t.Logf("%s round %d on=%v %.1fs: %s%s", p.Part, s.Round, s.On, s.Seconds, s.Proof, s.Error)
			if s.Error != "" || s.Proof == "" {
				t.Errorf("%s switch in round %d: no proof (%s)", p.Part, s.Round, s.Error)
			}
		}
	}
	policy, flows := parts["policy"], parts["flows"]
	if len(policy.Switches) < 11 || len(flows.Switches) < 6 {
		t.Errorf("%d policy and %d flows switches (with the check): want on and off around each of 5 segments, and flows once a round", len(policy.Switches), len(flows.Switches))
	}
	for _, s := range policy.Switches[1:] {
		if s.On && !strings.Contains(s.Proof, "enforced") || !s.On && !strings.Contains(s.Proof, "every probe connects again") {
			t.Errorf("policy on=%v proof: %s", s.On, s.Proof)
		}
	}
	for _, s := range flows.Switches[1:] {
		if s.On && !regexp.MustCompile(`raised seen-flows \+\d+ on `).MatchString(s.Proof) || !s.On && !strings.Contains(s.Proof, "Hubble Disabled") {
			t.Errorf("flows on=%v proof: %s", s.On, s.Proof)
		}
	}
	notMeasured := map[string]string{}
	for _, q := range res.Plan.Questions {
		notMeasured[q.B[strings.LastIndex(q.B, "+")+1:]] = q.NotMeasured
	}
	if notMeasured["policy"] != "" || notMeasured["flows"] != "" || !strings.Contains(notMeasured["l7-node"], "enable-l7-proxy=false") || notMeasured["l7-sidecar"] == "" {
		t.Errorf("questions not measured: %v", notMeasured)
	}
	if !strings.Contains(r.stdout, "not measured: ") || !strings.Contains(r.stdout, "policy cost on short-connection HTTP") {
		t.Errorf("the answers do not say what was measured and what not:\n%s", tail(r.stdout, 20))
	}
	after := e.ciliumConfig(t)
	if after.hubble != before.hubble || after.present != before.present || len(after.records) > 0 {
		t.Errorf("cilium-config after the run: enable-hubble %q (set %v), records %v; before: %q (set %v)", after.hubble, after.present, after.records, before.hubble, before.present)
	}
	mustOK(t, e.k(t, "-n", "kube-system", "rollout", "status", "daemonset/cilium", "--timeout", "5m"), "cilium rollout")
	e.waitGone(t, ns, true)
}

// kill -9 after the flows twin switched Hubble: cilium-config keeps the
// value from before as cnibench's record, and `k8s cleanup` puts it back,
// restarts Cilium and removes the run's objects.
func TestSecuritySIGKILLThenCleanupRestoresHubble(t *testing.T) {
	e := getEnv(t)
	e.needCNI(t, "cilium")
	before := e.ciliumConfig(t)
	c := exec.Command(e.bin, "run", "--target", "k8s", "--kubeconfig", e.kubeconfig, "--image", e.image, "--profile", "security",
		"--allow-cluster-changes", "--rounds", "5", "--duration", "1s", "--out", filepath.Join(t.TempDir(), "run"))
	stderr := &syncBuffer{}
	c.Stdout, c.Stderr = stderr, stderr
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { c.Wait(); close(exited) }()
	t.Cleanup(func() { c.Process.Kill(); <-exited })
	switched := regexp.MustCompile(`switching flows (on|off) … rolled out`)
	deadline := time.Now().Add(10 * time.Minute)
	for !switched.MatchString(stderr.String()) {
		select {
		case <-exited:
			t.Fatalf("the run ended before Hubble was switched; cnibench said:\n%s", tail(stderr.String(), 40))
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("Hubble not switched after 10 min; cnibench said:\n%s", tail(stderr.String(), 40))
		}
	}
	c.Process.Kill()
	<-exited
	if got := e.ciliumConfig(t); len(got.records) == 0 || got.hubble == before.hubble {
		t.Fatalf("after SIGKILL: enable-hubble %q, records %v: the test did not kill with Hubble switched", got.hubble, got.records)
	}
	cl := e.cnibench(t, e.kubeconfig, "k8s", "cleanup")
	mustOK(t, cl, "k8s cleanup")
	if !strings.Contains(cl.stdout, "restored ConfigMap kube-system/cilium-config enable-hubble put back to") {
		t.Errorf("cleanup does not say it restored cilium-config:\n%s", cl.stdout)
	}
	if after := e.ciliumConfig(t); after.hubble != before.hubble || after.present != before.present || len(after.records) > 0 {
		t.Errorf("after cleanup: enable-hubble %q (set %v), records %v; before %q (set %v)", after.hubble, after.present, after.records, before.hubble, before.present)
	}
	mustOK(t, e.k(t, "-n", "kube-system", "rollout", "status", "daemonset/cilium", "--timeout", "5m"), "cilium rollout")
	e.waitGone(t, "cnibench", false)
}

// On the bridge CNI, which does not enforce NetworkPolicy, the policy
// twin is refused with the check's reason before anything is measured,
// and with no Cilium the flows twin too: the run is refused in one line
// naming both, and nothing is left.
func TestSecurityPolicyTwinRefusedByBridge(t *testing.T) {
	e := getEnv(t)
	e.needCNI(t, "bridge")
	const ns = "cnb-sec"
	e.grantUser(t, ns)
	r := e.cnibench(t, e.userKubeconfig, "run", "--target", "k8s", "--image", e.image, "--namespace", ns, "--profile", "security",
		"--rounds", "5", "--duration", "1s", "--out", filepath.Join(t.TempDir(), "run"))
	if r.code == 0 {
		t.Fatalf("run on the bridge CNI exited 0:\n%s", tail(r.stderr, 30))
	}
	if !regexp.MustCompile(`\+policy: checking that policy can be switched … refused: this CNI does not enforce NetworkPolicy: the denied probe from netpol-denied to node1-pod0`).MatchString(r.stderr) {
		t.Errorf("the progress does not refuse the policy twin with the reason:\n%s", tail(r.stderr, 30))
	}
	last := strings.TrimSpace(r.stderr[strings.LastIndex(strings.TrimSpace(r.stderr), "\n")+1:])
	if !strings.HasPrefix(last, "cnibench: no twin of ") || !strings.Contains(last, "policy: this CNI does not enforce NetworkPolicy") ||
		!strings.Contains(last, "flows: no Cilium on this cluster") {
		t.Errorf("the run's error: %q", last)
	}
	e.waitGone(t, ns, true)
}

// ciliumState is cilium-config's enable-hubble and cnibench's records.
type ciliumState struct {
	hubble  string
	present bool
	records []string
}

func (e *env) ciliumConfig(t *testing.T) ciliumState {
	t.Helper()
	r := e.k(t, "-n", "kube-system", "get", "configmap", "cilium-config", "-o", "json")
	mustOK(t, r, "get cilium-config")
	var cm struct {
		Metadata struct {
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
		Data map[string]string `json:"data"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &cm); err != nil {
		t.Fatal(err)
	}
	var st ciliumState
	st.hubble, st.present = cm.Data["enable-hubble"]
	for k := range cm.Metadata.Annotations {
		if strings.HasPrefix(k, "cnibench.io/restore-") {
			st.records = append(st.records, k)
		}
	}
	return st
}
