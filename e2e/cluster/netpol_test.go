package cluster

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// The NetworkPolicy check on the local cluster, run by the least-privilege
// user (so the Role of `k8s rbac` is enough for the policy): the baseline
// and the client's probes connect; on the bridge CNI, which does not
// enforce NetworkPolicy, the denied prober still connects after the
// bounded wait and the outcome is "not enforced" with the bridge named as
// not enforcing; on Cilium the denied prober is dropped and the outcome is
// "enforced". Every sample is measured, and no policy (nor anything else)
// of the run is left afterwards.
func TestNetworkPolicy(t *testing.T) {
	e := getEnv(t)
	const ns = "cnb-netpol"
	e.grantUser(t, ns)
	out := filepath.Join(t.TempDir(), "run")
	r := e.cnibench(t, e.userKubeconfig, "run", "--target", "k8s", "--image", e.image, "--namespace", ns,
		"--network-policy-check", "--tests", "TCP_RR", "--placements", "pod-to-pod/same-node,pod-to-pod/other-node",
		"--rounds", "1", "--duration", "1s", "--warmup", "0s", "--out", out)
	mustOK(t, r, "run --network-policy-check")
	res := readResults(t, out)
	checkSamples(t, res)
	type probe struct {
		From, To, Addr, Detail string
		Allowed, Connected     bool
	}
	var d struct {
		NP *struct {
			Outcome, Verdict string
			Servers          []string
			Baseline, Probes []probe
			Attempts         int
			WaitedS          float64 `json:"waited_s"`
			InPlace          bool    `json:"policy_in_place"`
		} `json:"network_policy"`
	}
	raw, _ := json.Marshal(res.Target.Details)
	if err := json.Unmarshal(raw, &d); err != nil || d.NP == nil {
		t.Fatalf("target.details.network_policy: %v: %s", err, raw)
	}
	np := d.NP
	t.Logf("network_policy: %s after %d attempts in %.1f s: %s", np.Outcome, np.Attempts, np.WaitedS, np.Verdict)
	if len(np.Servers) != 2 || len(np.Baseline) != 4 || len(np.Probes) != 4 {
		t.Errorf("servers %v, %d baseline and %d probes, want 2, 4, 4", np.Servers, len(np.Baseline), len(np.Probes))
	}
	if !strings.Contains(r.stderr, "NetworkPolicy check: applying") {
		t.Errorf("the progress does not show the check:\n%s", tail(r.stderr, 30))
	}
	if e.cilium() {
		if np.Outcome != "enforced" || !np.InPlace {
			t.Errorf("outcome %q, verdict %q, policy in place %v", np.Outcome, np.Verdict, np.InPlace)
		}
		for _, p := range np.Baseline {
			if !p.Connected {
				t.Errorf("baseline %s to %s (%s) dropped: %s", p.From, p.To, p.Addr, p.Detail)
			}
		}
		for _, p := range np.Probes {
			if p.Connected != p.Allowed {
				t.Errorf("Cilium let %s to %s (%s, allowed %v) connect=%v: %s", p.From, p.To, p.Addr, p.Allowed, p.Connected, p.Detail)
			}
		}
		e.waitGone(t, ns, true)
		return
	}
	if np.Outcome != "not enforced" || !strings.HasPrefix(np.Verdict, "this CNI does not enforce NetworkPolicy") || !np.InPlace {
		t.Errorf("outcome %q, verdict %q, policy in place %v", np.Outcome, np.Verdict, np.InPlace)
	}
	for _, p := range append(np.Baseline, np.Probes...) {
		if !p.Connected {
			t.Errorf("the bridge dropped %s to %s (%s, allowed %v): %s", p.From, p.To, p.Addr, p.Allowed, p.Detail)
		}
	}
	if !strings.Contains(r.stderr, "warning: this CNI does not enforce NetworkPolicy") {
		t.Errorf("the progress does not show the warning:\n%s", tail(r.stderr, 30))
	}
	e.waitGone(t, ns, true) // the admin's namespace stays; the policy is gone
}
