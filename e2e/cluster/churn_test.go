package cluster

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The churn schedule on the real cluster, sized for two nodes on a
// 2-core machine: 300 dummy Services × 4 endpoints in our namespace (above
// 1,000 endpoints, where kube-proxy's iptables mode leaves stale KUBE-SEP
// chains for a sync period: a replaced endpoint is held only once its
// KUBE-SVC chain stops jumping to the old one, not once its chain goes), and
// during the churned twin's samples 5 changes a second (endpoints scaled
// up and down and replaced, a Service added and removed) written through
// the API server. Every change must be reported held by both nodes'
// kube-proxy, as their probes read it (a replaced endpoint by its chain),
// and its latency is kube-proxy's: it includes its 1 s minimum sync
// interval. The rate is achieved (or the report says why), the dummies
// are gone afterwards.
func TestChurn(t *testing.T) {
	e := getEnv(t)
	out := filepath.Join(t.TempDir(), "run")
	r := e.cnibench(t, e.kubeconfig, "run", "--target", "k8s", "--image", e.image, "--tests", "churn",
		"--churn-services", "300", "--churn-rate", "5", "--rounds", "1", "--duration", "3s", "--warmup", "500ms", "--out", out)
	mustOK(t, r, "churn run")
	res := readResults(t, out)
	checkSamples(t, res)
	if res.Churn == nil || len(res.Churn.Scenarios) != 2 {
		t.Fatalf("churn scenarios: %+v", res.Churn)
	}
	for _, sc := range res.Churn.Scenarios {
		if sc.Datapath != e.datapath() || sc.Counts.Services != 300 || sc.Counts.Endpoints != 1200 ||
			sc.Churned != strings.HasSuffix(sc.Scenario, "+churn") {
			t.Errorf("scenario %+v", sc)
		}
		if sc.Churned && (sc.Idle == nil || sc.Idle.Held == 0 || sc.Idle.Failures != 0) {
			t.Errorf("%s: idle window %+v", sc.Scenario, sc.Idle)
		}
	}
	churned := 0
	for _, rs := range res.Results {
		for _, s := range rs.Samples {
			c := s.Churn
			if !strings.HasSuffix(rs.Scenario, "+churn") {
				if c != nil {
					t.Errorf("%s %s: churned without the churn part", rs.Scenario, rs.Test)
				}
				continue
			}
			if c == nil {
				t.Errorf("%s %s: no churn recorded", rs.Scenario, rs.Test)
				continue
			}
			churned++
			if c.Made < 10 || c.Held != c.Made || c.Pending != 0 || len(c.LatenciesMs) != c.Held || c.Failures != 0 || !c.Confirmed || c.MinSync != 0 {
				t.Errorf("%s %s: made %d held %d pending %d failures %d (%s) confirmed %v min sync %s",
					rs.Scenario, rs.Test, c.Made, c.Held, c.Pending, c.Failures, c.FirstError, c.Confirmed, c.MinSync)
			}
			if (c.Achieved < 4.5 || c.Achieved > 5.5) && c.ShortBy == "" {
				t.Errorf("%s %s: achieved %.2f changes/s of 5 and no reason given", rs.Scenario, rs.Test, c.Achieved)
			}
			// Held only once both nodes' kube-proxy synced: never within
			// a few milliseconds of the API write.
			for _, ms := range c.LatenciesMs {
				if ms < 5 {
					t.Errorf("%s %s: a change held %.1f ms after it was made", rs.Scenario, rs.Test, ms)
				}
			}
			t.Logf("%s %s (%s): %d changes at %.2f/s, programming latency p50 %.0f ms p99 %.0f ms max %.0f ms",
				rs.Scenario, rs.Test, e.datapath(), c.Held, c.Achieved, c.P50Ms, c.P99Ms, c.MaxMs)
		}
	}
	if churned != 3 {
		t.Errorf("%d churned samples, want 3 (one per test)", churned)
	}
	md, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## Churn", "changes written to the API server as they come", "timeline of round 1's HTTP_RPS_SHORT_C64 in 250 ms buckets"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	e.waitGone(t, "cnibench", false)
}
