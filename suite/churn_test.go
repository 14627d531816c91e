package suite

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/datapath/churn"
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
