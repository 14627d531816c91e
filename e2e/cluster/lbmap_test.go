package cluster

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// Cilium's Service LB map too small for a sweep, on the real agents: the
// preflight refuses before anything is created, naming the size and the
// need; with --allow-cluster-changes it raises bpf-lb-map-max for the run
// (the agents restarted, the sweep verified on both nodes' maps) and puts
// the old value back at the end. The test shrinks the map first (1,024
// entries; 1,000 Services × 4 endpoints need 5,000) and restores what it
// found.
func TestLBMapPreflightOnCilium(t *testing.T) {
	e := getEnv(t)
	e.needCNI(t, "cilium")
	const key, small = "bpf-lb-map-max", "1024"
	old, present := e.ciliumKey(t, key)
	e.setCiliumKey(t, key, small, true)
	t.Cleanup(func() { e.setCiliumKey(t, key, old, present) })

	args := []string{"run", "--target", "k8s", "--image", e.image, "--tests", "service-scale",
		"--scale-steps", "0,1000", "--rounds", "1", "--duration", "1s", "--warmup", "0s"}
	r := e.cnibench(t, e.kubeconfig, append(args, "--out", filepath.Join(t.TempDir(), "refused"))...)
	if r.code == 0 || !strings.Contains(r.stderr, "bpf-lb-map-max=1024 entries, 1000 Services × 4 endpoints need 5000") ||
		!strings.Contains(r.stderr, "--allow-cluster-changes") {
		t.Errorf("a sweep beyond the LB map was not refused with the size, the need and the way out (exit %d):\n%s", r.code, tail(r.stderr, 10))
	}
	if left := e.leftovers(t, "cnibench", false); len(left) > 0 {
		t.Errorf("the refused sweep left %v", left)
	}
	if v, _ := e.ciliumKey(t, key); v != small {
		t.Errorf("the refused sweep changed %s to %q", key, v)
	}

	out := filepath.Join(t.TempDir(), "allowed")
	r = e.cnibench(t, e.kubeconfig, append(args, "--allow-cluster-changes", "--out", out)...)
	mustOK(t, r, "sweep with --allow-cluster-changes")
	if !strings.Contains(r.stderr, "setting cilium-config bpf-lb-map-max 1024 -> 65536") || !strings.Contains(r.stderr, "reverting ") {
		t.Errorf("the run did not say it raised and reverted the map:\n%s", tail(r.stderr, 30))
	}
	res := readResults(t, out)
	checkSamples(t, res)
	var details struct {
		ServiceScale struct {
			ClusterChange *struct{ Key, Old, New, Restarted string } `json:"cluster_change"`
		} `json:"service_scale"`
	}
	raw, _ := json.Marshal(res.Target.Details)
	if err := json.Unmarshal(raw, &details); err != nil {
		t.Fatalf("target.details: %v", err)
	}
	if ch := details.ServiceScale.ClusterChange; ch == nil || ch.Key != key || ch.Old != small || ch.New != "65536" ||
		ch.Restarted != "DaemonSet kube-system/cilium" {
		t.Errorf("the results do not record the change: %+v", ch)
	}
	if len(res.Sweeps) != 1 || len(res.Sweeps[0].Steps) != 2 {
		t.Fatalf("want one sweep of 2 steps: %+v", res.Sweeps)
	}
	for _, st := range res.Sweeps[0].Steps {
		if st.Error != "" || st.Sync == nil || st.Sync.Mode != "node" || len(st.Sync.Nodes) != 2 {
			t.Errorf("step %d not verified on both nodes' LB maps: error %q, sync %+v", st.Services, st.Error, st.Sync)
		}
	}
	if v, _ := e.ciliumKey(t, key); v != small {
		t.Errorf("%s is %q after the run, want %s back", key, v, small)
	}
	e.waitGone(t, "cnibench", false)
}

// ciliumKey is one key of cilium-config and whether it is set.
func (e *env) ciliumKey(t *testing.T, key string) (string, bool) {
	t.Helper()
	r := e.k(t, "-n", "kube-system", "get", "configmap", "cilium-config", "-o", "json")
	mustOK(t, r, "get cilium-config")
	var cm struct{ Data map[string]string }
	if err := json.Unmarshal([]byte(r.stdout), &cm); err != nil {
		t.Fatal(err)
	}
	v, ok := cm.Data[key]
	return v, ok
}

// setCiliumKey sets (or with present false removes) a key of cilium-config
// and restarts the agents, as an admin applies a config change: the
// agents read it at start only.
func (e *env) setCiliumKey(t *testing.T, key, value string, present bool) {
	t.Helper()
	patch := map[string]any{"data": map[string]any{key: nil}}
	if present {
		patch["data"] = map[string]any{key: value}
	}
	p, _ := json.Marshal(patch)
	mustOK(t, e.k(t, "-n", "kube-system", "patch", "configmap", "cilium-config", "--type", "merge", "-p", string(p)), "patch cilium-config")
	mustOK(t, e.k(t, "-n", "kube-system", "rollout", "restart", "daemonset/cilium"), "restart the Cilium agents")
	mustOK(t, e.k(t, "-n", "kube-system", "rollout", "status", "daemonset/cilium", "--timeout", "5m"), "the Cilium agents' rollout")
}
