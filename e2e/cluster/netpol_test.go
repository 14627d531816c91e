package cluster

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// The NetworkPolicy check on the local cluster, run by the least-privilege
// user (so the Role of `k8s rbac` is enough for the policies): the
// baseline and the client's probes connect; on the bridge CNI, which does
// not enforce NetworkPolicy, the denied prober still connects after the
// bounded wait and the outcome is "not enforced" with the bridge named as
// not enforcing; on Cilium the denied prober is dropped and the outcome is
// "enforced", and (subtest CiliumNetworkPolicy, skipped on the bridge)
// the L3/L4 CiliumNetworkPolicy is enforced (the client's probe to the
// prober dropped) while the L7 one is "not enforced: no L7 proxy on this
// cluster". Every sample is measured, and no policy (nor anything else)
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
			CiliumL4         *struct {
				Applied                bool
				Name, Outcome, Verdict string
				Reason                 string
				Baseline, Probe        *probe
				Attempts               int
			} `json:"cilium_l4"`
			CiliumL7 *struct {
				Applied, Verified     bool
				Name, Outcome, Reason string
				Attempts              int
				Probes                []struct {
					URL    string
					Want   int
					Status map[string]int64
				}
			} `json:"cilium_l7"`
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
	// The CiliumNetworkPolicies of the check, from the same run.
	t.Run("CiliumNetworkPolicy", func(t *testing.T) {
		if !e.cilium() {
			if np.CiliumL4 != nil || np.CiliumL7 != nil {
				t.Errorf("CiliumNetworkPolicies recorded where no Cilium runs: %s", raw)
			}
			t.Skip("the bridge cluster runs no Cilium and serves no CiliumNetworkPolicy CRD: nothing to apply")
		}
		l4, l7 := np.CiliumL4, np.CiliumL7
		if l4 == nil || l7 == nil {
			t.Fatalf("no cilium_l4 or cilium_l7 on Cilium: %s", raw)
		}
		// L3/L4: Cilium enforces its own policy kind; the prober it
		// selects is not the NetworkPolicy's, so the drop is its doing.
		t.Logf("cilium_l4: %s after %d attempts: %s", l4.Outcome, l4.Attempts, l4.Verdict)
		if !l4.Applied || l4.Name != "cnibench-l4-prober-ingress" || l4.Outcome != "enforced" || l4.Baseline == nil || !l4.Baseline.Connected ||
			l4.Probe == nil || l4.Probe.Connected || l4.Probe.From != "node0-pod0" || l4.Probe.To != "netpol-denied" ||
			!strings.HasPrefix(l4.Verdict, "CiliumNetworkPolicy L3/L4 enforced ") {
			t.Errorf("the L3/L4 CiliumNetworkPolicy is not proved enforced (probe dropped): %+v, baseline %+v, probe %+v", l4, l4.Baseline, l4.Probe)
		}
		// L7: this Cilium runs with enable-l7-proxy=false (scripts/cluster/cilium.sh),
		// and so refuses the rule: not enforced, said in one line, after one look.
		t.Logf("cilium_l7: %s after %d attempts: %s", l7.Outcome, l7.Attempts, l7.Reason)
		const noProxy = "no L7 proxy on this cluster (cilium-config enable-l7-proxy=false: Cilium refuses policies with L7 rules); GET http://"
		if !l7.Applied || l7.Verified || l7.Outcome != "not enforced" || !strings.HasPrefix(l7.Reason, noProxy) || l7.Attempts != 1 || len(l7.Probes) != 4 {
			t.Errorf("the L7 CiliumNetworkPolicy: %+v, want not enforced: %s…", l7, noProxy)
		}
		notes := map[string]bool{} // the run's notes, each prefixed with its scenario's name
		for _, n := range res.Notes {
			switch {
			case strings.Contains(n, "\n"):
				t.Errorf("a note on several lines: %q", n)
			case strings.Contains(n, ": CiliumNetworkPolicy L3/L4 enforced "):
				notes["l4"] = true
			case strings.Contains(n, ": CiliumNetworkPolicy L7 rule: not enforced: "+noProxy):
				notes["l7"] = true
			}
		}
		if !notes["l4"] || !notes["l7"] {
			t.Errorf("the run's notes do not say the L3/L4 policy enforced and the L7 rule not enforced: no L7 proxy on this cluster: %q", res.Notes)
		}
		if !strings.Contains(r.stderr, "; CiliumNetworkPolicy L3/L4: probing netpol-denied from node0-pod0 ... enforced; L7 rule: probing / (200) and /cnibench-l7-denied (403) ... not enforced (no L7 proxy on this cluster)") {
			t.Errorf("the progress does not show the CiliumNetworkPolicy checks:\n%s", tail(r.stderr, 30))
		}
	})
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
