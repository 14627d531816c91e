package suite

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/cnibench/cnibench/datapath/churn"
	"github.com/cnibench/cnibench/results"
)

// ChurnTest is the --tests name of the churn schedule, a test of its own
// kind like the Service-scale sweep: it keeps Services programmed and
// changes them during the samples of churned scenarios.
const ChurnTest = "churn"

// ChurnPart is the scenario part that churns ("iptables+churn"): the
// scenario keeps the same Services as the one without it, and the churn
// changes them during its samples, so the report's overhead columns
// compare the two round by round.
const ChurnPart = "churn"

// ChurnTests are measured with and without churn: keep-alive and
// short-connection HTTP, and connection setup.
var ChurnTests = []string{"HTTP_RPS_C64", "HTTP_RPS_SHORT_C64", "TCP_CRR"}

// Churned tells whether a scenario has the churn part.
func Churned(sc Scenario) bool { return sc.Parts.Has(ChurnPart) }

// Churn is the churn schedule: every scenario's Service datapath holds
// the test Services among Options.Services dummies, programmed once; then
// rounds as in Rounds (scenarios innermost), and during each sample of a
// churned scenario the churn changes its dummies at the requested rate
// through a sync loop like its Service proxy's.
type Churn struct {
	Options churn.Options

	states []*churnState
	index  []int // Result index per (test, scenario), in loop order
}

type churnState struct {
	sc        Scenario
	ch        *churn.Churner
	churned   bool
	placement string // ScalePlacement
}

// Reprograms implements Reprogrammer: the dummies the churn keeps
// programmed and changes.
func (s *Churn) Reprograms() Reprogramming {
	return Reprogramming{Services: s.Options.Services, Endpoints: s.Options.Endpoints, Verb: "churn", Live: true}
}

// Estimate implements Schedule: the rounds of every scenario, churned
// twins included (the idle churn before them left out, as programming).
func (*Churn) Estimate(p *Plan, scenarios []string) time.Duration {
	return reprogramEstimate(p, len(scenarios), 1)
}

// ChurnPlan resolves the churn's plan: ChurnTests on one pod-to-service
// placement, 5 rounds unless given.
func ChurnPlan(o Options) (*Plan, error) {
	return ReprogramPlan(o, ChurnTest, "it measures "+strings.Join(ChurnTests, ", ")+" with and without churn", ChurnTests)
}

// Expand implements Expander: every scenario with its churned twin
// ("iptables" with "iptables+churn") right after it, unless the list has
// it; a churned scenario is kept as given.
func (*Churn) Expand(names []results.ScenarioName) []results.ScenarioName {
	var out []results.ScenarioName
	has := map[string]bool{}
	for _, n := range names {
		has[n.String()] = true
	}
	for _, n := range names {
		out = append(out, n)
		if twin := n.With(ChurnPart); !n.Has(ChurnPart) && !has[twin.String()] {
			out = append(out, twin)
		}
	}
	return out
}

// Order implements Schedule.
func (*Churn) Order() string {
	return "rounds, then tests, then scenarios (interleaved); a churned scenario's Services change during its samples"
}

// Prepare programs every scenario's steady state (and checks it is held)
// before anything is measured.
func (s *Churn) Prepare(ctx context.Context, r *Runner) (int, error) {
	if err := s.Options.Validate(); err != nil {
		return 0, err
	}
	run := r.run
	run.Plan.Placements = nil
	run.Churn = &results.Churn{Options: s.Options}
	s.states, s.index = nil, nil
	anyChurned := false
	for _, sc := range r.Scenarios {
		st, rec, placement, err := s.prepare(ctx, r, sc)
		if err != nil {
			return 0, fmt.Errorf("scenario %s: %w", sc.Name, err)
		}
		st.placement = placement
		addPlacement(run, placement)
		anyChurned = anyChurned || st.churned
		run.Churn.Scenarios = append(run.Churn.Scenarios, rec)
		s.states = append(s.states, st)
	}
	if !anyChurned {
		return 0, fmt.Errorf("%s: no scenario churns: add one with the %q part (e.g. %s+%s beside %s)", ChurnTest, ChurnPart, r.Scenarios[0].Name, ChurnPart, r.Scenarios[0].Name)
	}
	for _, spec := range r.Plan.Specs {
		for _, st := range s.states {
			pl, err := st.sc.Target.Placement(st.placement)
			if err != nil {
				return 0, fmt.Errorf("scenario %s: %w", st.sc.Name, err)
			}
			res := r.Plan.newResult(spec, pl, st.sc.Name)
			res.Services = s.Options.Services
			s.index = append(s.index, r.addResult(res))
		}
	}
	return len(s.index) * r.Plan.Rounds, nil
}

// prepare programs one scenario's steady state.
func (s *Churn) prepare(ctx context.Context, r *Runner, sc Scenario) (*churnState, results.ChurnScenario, string, error) {
	rec := results.ChurnScenario{Scenario: sc.Name, Churned: Churned(sc)}
	tgt, dp, test, placement, err := reprogrammable(sc, "churn its Service datapath")
	if err != nil {
		return nil, rec, "", err
	}
	rec.Datapath = dp.Name()
	if _, _, err := conntrackPreflight(ctx, r.Plan.Specs, tgt, dp.Name()); err != nil && !unknown(err) {
		return nil, rec, "", err
	}
	ch, err := churn.New(dp, test, s.Options)
	if err != nil {
		return nil, rec, "", err
	}
	r.progress("%s: programming %d Services × %d endpoints on %s… ", sc.Name, s.Options.Services, s.Options.Endpoints, dp.Name())
	t0 := time.Now()
	if rec.Program, err = ch.Program(ctx); err != nil {
		r.progress("failed\n")
		return nil, rec, "", err
	}
	if rec.Counts, err = dp.Verify(ctx); err != nil {
		return nil, rec, "", err
	}
	r.progress("held after %s\n", time.Since(t0).Round(time.Millisecond))
	if rec.Memory, err = dp.Memory(ctx); err != nil {
		r.progress("%s: datapath memory not read: %v\n", sc.Name, err)
	}
	if rec.Churned {
		// The sync loop without traffic, for the idle side of its CPU
		// and latency.
		idle := time.Duration(r.Plan.Duration)
		r.progress("%s: churning %s without traffic… ", sc.Name, idle)
		ch.Start(ctx)
		select {
		case <-ctx.Done():
		case <-time.After(idle):
		}
		res := ch.Stop()
		if ctx.Err() != nil {
			return nil, rec, "", ctx.Err()
		}
		rec.Idle = &res
		r.progress("%.1f changes/s, programmed in p50 %s ms, p99 %s ms\n", res.Achieved, fmtMs(res.P50Ms), fmtMs(res.P99Ms))
	}
	return &churnState{sc: sc, ch: ch, churned: rec.Churned}, rec, placement, nil
}

// Measure implements Schedule.
func (s *Churn) Measure(ctx context.Context, r *Runner) error {
	for round := 1; round <= r.Plan.Rounds; round++ {
		i := 0
		for _, spec := range r.Plan.Specs {
			for _, st := range s.states {
				res := s.index[i]
				i++
				var d during
				if st.churned {
					d = st.during
				}
				label := fmt.Sprintf("round %d %-18s %-18s ", round, spec.Name, st.sc.Name)
				if err := r.takeDuring(ctx, st.sc, res, round, label, d); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// during runs the churn for one sample.
func (st *churnState) during(ctx context.Context) func(*results.Sample) {
	st.ch.Start(ctx)
	return func(smp *results.Sample) {
		// The traffic's numbers stand either way (dropping the sample
		// would drop the worst windows from the verdicts); a failed sync
		// or read-back is in the churn's record and the report warns.
		res := st.ch.Stop()
		smp.Churn = &res
	}
}
