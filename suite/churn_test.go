package suite

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/datapath/churn"
	"github.com/cnibench/cnibench/datapath/sweep"
	"github.com/cnibench/cnibench/engine"
	"github.com/cnibench/cnibench/results"
)

// The churn schedule programs every scenario's steady state, churns only
// during the churned twin's samples (and once without traffic before the
// rounds), records each window in its sample, and refuses a run with no
// churned scenario before anything is measured.
func TestChurnSchedule(t *testing.T) {
	c := startAgent(t)
	var calls []string
	plain := scaleLoopTarget{&usageTarget{loopTarget: loopTarget{c, &calls, "a"}}, &memDatapath{}}
	twin := scaleLoopTarget{&usageTarget{loopTarget: loopTarget{c, &calls, "a"}}, &memDatapath{}}
	plan, err := Options{Tests: []string{"TCP_RR"}, Placements: []string{PodToServiceOtherNode}, Rounds: 2, Duration: 200 * time.Millisecond}.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	plan.Warmup = 0
	zero := time.Duration(0)
	opts := churn.Options{Services: 20, Endpoints: 2, Rate: 50, MinSync: &zero}

	r := &Runner{Scenarios: []Scenario{{Name: "mem", Target: plain}}, Plan: plan, OutDir: t.TempDir(), RunID: "churn", Schedule: &Churn{Options: opts}}
	if _, err := r.Run(context.Background()); err == nil || !strings.Contains(err.Error(), `no scenario churns: add one with the "churn" part (e.g. mem+churn beside mem)`) {
		t.Fatalf("without a churned scenario: %v", err)
	}

	r = &Runner{Scenarios: []Scenario{{Name: "mem", Target: plain}, {Name: "mem+churn", Parts: results.ScenarioName{"mem", ChurnPart}, Target: twin}}, Plan: plan, OutDir: t.TempDir(), RunID: "churn", Schedule: &Churn{Options: opts}}
	run, err := r.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if run.Churn == nil || len(run.Churn.Scenarios) != 2 || run.Churn.Scenarios[0].Churned || !run.Churn.Scenarios[1].Churned {
		t.Fatalf("churn plan: %+v", run.Churn)
	}
	for _, sc := range run.Churn.Scenarios {
		if sc.Counts.Services != 20 || sc.Counts.Endpoints != 40 {
			t.Errorf("%s: steady state %+v, want 20 Services × 2", sc.Scenario, sc.Counts)
		}
		if (sc.Idle != nil) != sc.Churned {
			t.Errorf("%s: idle window %v", sc.Scenario, sc.Idle)
		}
	}
	if len(run.Results) != 2 {
		t.Fatalf("%d results", len(run.Results))
	}
	for _, res := range run.Results {
		if res.Services != 20 || len(res.Samples) != 2 {
			t.Errorf("%s: %d Services, %d samples", res.Scenario, res.Services, len(res.Samples))
		}
		for _, s := range res.Samples {
			switch {
			case res.Scenario == "mem" && s.Churn != nil:
				t.Errorf("mem round %d churned", s.Round)
			case res.Scenario == "mem+churn" && (s.Churn == nil || s.Churn.Made == 0 || s.Churn.Held != s.Churn.Made):
				t.Errorf("mem+churn round %d: %+v", s.Round, s.Churn)
			}
		}
	}
}

// Every scenario gets its churned twin right after it, unless the list
// has it; a churned scenario is kept as given. ExpandScenarios asks the
// schedule, and a schedule that adds none keeps the list.
func TestChurnExpand(t *testing.T) {
	var names []results.ScenarioName
	for _, s := range []string{"iptables", "ebpf+churn", "ebpf", " NFTables "} {
		n, err := results.ParseScenarioName(s)
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, n)
	}
	var got []string
	for _, n := range ExpandScenarios(&Churn{}, names) {
		got = append(got, n.String())
	}
	want := []string{"iptables", "iptables+churn", "ebpf+churn", "ebpf", "nftables", "nftables+churn"}
	if !slices.Equal(got, want) {
		t.Errorf("Churn.Expand: %v, want %v", got, want)
	}
	if got := ExpandScenarios(&Rounds{}, names); len(got) != len(names) {
		t.Errorf("Rounds expanded %d scenarios to %d", len(names), len(got))
	}
}

// Each schedule's estimate is its samples' time: the sweep's rounds on
// one placement at every step, the churn's on every scenario (twins
// counted), plain rounds on every placement.
func TestScheduleEstimates(t *testing.T) {
	p := &Plan{Specs: make([]TestSpec, 3)}
	p.Rounds, p.Duration, p.Warmup = 5, engine.Duration(2*time.Second), engine.Duration(time.Second)
	p.Placements = []string{PodToServiceOtherNode, PodToServiceSameNode}
	sweepOpts := sweep.Options{Steps: []int{0, 1000, 5000}, Endpoints: 4}
	for _, c := range []struct {
		s    Schedule
		n    int
		want time.Duration
	}{
		{&Rounds{}, 2, 5 * 3 * 2 * 2 * 3 * time.Second},
		{&ServiceScale{Sweep: sweepOpts}, 2, 3 * 5 * 3 * 2 * 3 * time.Second},
		{&Churn{}, 4, 5 * 3 * 4 * 3 * time.Second},
	} {
		if got := c.s.Estimate(p, make([]string, c.n)); got != c.want {
			t.Errorf("%T on %d scenarios: %s, want %s", c.s, c.n, got, c.want)
		}
	}
	if rp := ReprogrammingOf(&ServiceScale{Sweep: sweepOpts}); rp == nil || rp.Services != 5000 || rp.Endpoints != 4 || rp.Live {
		t.Errorf("the sweep's reprogramming: %+v", rp)
	}
	if rp := ReprogrammingOf(&Churn{Options: churn.Options{Services: 100, Endpoints: 4}}); rp == nil || rp.Services != 100 || !rp.Live || rp.Verb != "churn" {
		t.Errorf("the churn's reprogramming: %+v", rp)
	}
	if ReprogrammingOf(&Rounds{}) != nil {
		t.Error("plain rounds reprogram the datapath")
	}
}
