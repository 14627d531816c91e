package e2e

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/internal/hosttest"
)

// churnResults is the part of results.json a churn run adds.
type churnResults struct {
	Status string
	Churn  struct {
		Scenarios []struct {
			Scenario, Datapath string
			Churned            bool
			Counts             struct{ Services, Endpoints int }
		}
	}
	Results []struct {
		Scenario, Test string
		Services       int
		Samples        []struct {
			Error string
			Churn *struct {
				Made      int       `json:"changes_made"`
				Held      int       `json:"changes_held"`
				Pending   int       `json:"changes_pending"`
				Achieved  float64   `json:"achieved_rate"`
				ShortBy   string    `json:"short_by"`
				Latencies []float64 `json:"programming_latency_ms"`
				Failures  int       `json:"sync_failures"`
				Partial   bool      `json:"partial_syncs"`
				MinSync   int64     `json:"min_sync_interval_ns"`
				Confirmed bool      `json:"confirmed"`
			}
		}
	}
}

// One CI-sized churn run through the CLI (cnibench churn, the path of run
// --tests churn: cli.TestScheduleCommandIsRunTests) on nftables and eBPF: each beside
// its churned twin, the same 100 Services read back in all four labs, the
// churn only in the twins' samples, at the rate asked (or saying why not),
// every change held and timed, synced as kube-proxy (1 s, partial) and
// Cilium (per change) do, and the report's Churn section. Nothing is left
// behind.
func TestChurnRun(t *testing.T) {
	l := newLab(t)
	l.name = fmt.Sprintf("c%d", rand.Intn(1e4)) // + "ebpfchn" fits a lab name's 12 characters
	labs := scenarioLabs(t, l, "nft", "nftchn", "ebpf", "ebpfchn")
	before := hosttest.Take(t)
	out := filepath.Join(t.TempDir(), "out")
	stdout, stderr, code := l.run("churn", "--scenarios", "nftables,ebpf", "--churn-services", "100",
		"--churn-rate", "20", "--duration", "700ms", "--warmup", "100ms", "--rounds", "1", "--out", out)
	if code != 0 {
		if strings.Contains(stderr, "unsupported") {
			t.Skipf("a datapath is unsupported here: %s", stderr)
		}
		t.Fatalf("run exited %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	for _, want := range []string{"churn of 100 Services × 4 endpoints at 20 changes/s on nftables, nftables+churn, ebpf, ebpf+churn",
		"nftables+churn: programming 100 Services × 4 endpoints on nftables… held after", "(asked 20)"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("progress lacks %q:\n%s", want, stderr)
		}
	}
	b, err := os.ReadFile(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r churnResults
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	if r.Status != "complete" || len(r.Churn.Scenarios) != 4 {
		t.Fatalf("status %s, %d churn scenarios", r.Status, len(r.Churn.Scenarios))
	}
	for _, sc := range r.Churn.Scenarios {
		// 7 test Service ports beside the dummies, the same in every lab.
		if sc.Counts.Services != 107 || sc.Counts.Endpoints <= 400 || sc.Counts != r.Churn.Scenarios[0].Counts || sc.Churned != strings.HasSuffix(sc.Scenario, "+churn") {
			t.Errorf("%s: %+v", sc.Scenario, sc)
		}
	}
	if len(r.Results) != 3*4 {
		t.Fatalf("%d results, want 12", len(r.Results))
	}
	for _, res := range r.Results {
		churned := strings.HasSuffix(res.Scenario, "+churn")
		for _, s := range res.Samples {
			c := s.Churn
			switch {
			case s.Error != "":
				t.Errorf("%s %s: %s", res.Scenario, res.Test, s.Error)
			case !churned && c != nil:
				t.Errorf("%s %s: churned without the churn part", res.Scenario, res.Test)
			case churned && c == nil:
				t.Errorf("%s %s: no churn recorded", res.Scenario, res.Test)
			case churned:
				if c.Made < 10 || c.Held != c.Made || c.Pending != 0 || len(c.Latencies) != c.Held || c.Failures != 0 || !c.Partial || !c.Confirmed {
					t.Errorf("%s %s: %+v", res.Scenario, res.Test, *c)
				}
				if (c.Achieved < 18 || c.Achieved > 22) && c.ShortBy == "" {
					t.Errorf("%s %s: achieved %.1f changes/s of 20 and no reason given", res.Scenario, res.Test, c.Achieved)
				}
				wantSync := int64(0)
				if res.Scenario == "nftables+churn" {
					wantSync = 1e9
				}
				if c.MinSync != wantSync {
					t.Errorf("%s: minimum sync interval %d ns, want %d", res.Scenario, c.MinSync, wantSync)
				}
				for _, ms := range c.Latencies {
					if ms <= 0 {
						t.Errorf("%s %s: a programming latency of %g ms", res.Scenario, res.Test, ms)
					}
				}
			}
		}
	}
	reportHas(t, out, "## Churn", "nftables+churn (nftables, partial syncs, minimum interval 1s)",
		"ebpf+churn (ebpf, partial syncs, a sync per change)", "programming latency, change made → held by every node's kernel: p50", "read back after each sample: 3 of 3 samples' datapaths held exactly the last sync",
		"HTTP_RPS_SHORT_C64 request rate:", "TCP_CRR rate:", "timeline of round 1's HTTP_RPS_SHORT_C64 in 250 ms buckets")
	leftClean(t, before, append(labs, l)...)
}
