package suite

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/cnibench/cnibench/results"
)

// Rounds is the plain schedule: every test on every placement and
// scenario, round after round, scenarios innermost (A B A B) so drift of a
// shared machine hits them alike.
type Rounds struct {
	index []int // Result index per (test, placement, scenario), in loop order
}

// notPlanned is Rounds.index for a cell the plan does not measure.
const notPlanned = -1

// Estimate implements Schedule: every sample of the plan on every scenario.
func (*Rounds) Estimate(p *Plan, scenarios []string) time.Duration {
	return p.EstimateOn(scenarios)
}

// Order implements Schedule.
func (*Rounds) Order() string {
	return "rounds, then tests, then placements, then scenarios (interleaved)"
}

// Prepare makes one Result per (test, placement, scenario) the plan
// measures (Plan.Measures); a placement or test a target cannot host is
// recorded as skipped.
func (s *Rounds) Prepare(_ context.Context, r *Runner) (int, error) {
	s.index = nil
	total := 0
	for _, spec := range r.Plan.Specs {
		for _, name := range r.Plan.Placements {
			for _, sc := range r.Scenarios {
				if !r.Plan.Measures(sc.Name, spec.Name) {
					s.index = append(s.index, notPlanned)
					continue
				}
				i, measured, err := r.prepareResult(spec, name, sc)
				if err != nil {
					return 0, err
				}
				s.index = append(s.index, i)
				if measured {
					total += r.Plan.Rounds
				}
			}
		}
	}
	// --rounds auto: after the cells are known (a skipped one answers no
	// question).
	if err := checkAuto(r); err != nil {
		return 0, err
	}
	return total, nil
}

// Measure implements Schedule. With --rounds auto it stops after the
// first round (fifth or later) at which every question is conclusive.
func (s *Rounds) Measure(ctx context.Context, r *Runner) error {
	for round := 1; round <= r.Plan.Rounds; round++ {
		i := 0
		for _, spec := range r.Plan.Specs {
			for _, name := range r.Plan.Placements {
				for _, sc := range r.Scenarios {
					res := s.index[i]
					i++
					if res == notPlanned || r.run.Results[res].Skipped != "" {
						continue
					}
					label := name
					if len(r.Scenarios) > 1 {
						label = sc.Name + " " + name
					}
					if err := r.take(ctx, sc, res, round, fmt.Sprintf("round %d %-18s %-30s ", round, spec.Name, label)); err != nil {
						return err
					}
				}
			}
		}
		if autoDone(r, round) {
			break // --rounds auto: the questions are clear
		}
	}
	return nil
}

// prepareResult adds the Result of one test on one placement in one
// scenario, recorded as skipped (with why) where the scenario's target
// cannot host the placement or the test; it returns the Result's index and
// whether it will be measured.
func (r *Runner) prepareResult(spec TestSpec, placement string, sc Scenario) (int, bool, error) {
	pl, err := sc.Target.Placement(placement)
	skipped := ""
	if errors.Is(err, ErrUnsupported) {
		path, node, _ := strings.Cut(placement, "/")
		pl, skipped, err = results.Placement{Path: path, Node: node}, err.Error(), nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("scenario %s: %w", sc.Name, err)
	}
	if skipped == "" {
		skipped = checkTest(sc.Target, spec)
	}
	res := r.Plan.newResult(spec, pl, sc.Name)
	if n := r.Plan.PairCount(); n > 1 && skipped == "" {
		if res.Pairs, skipped, err = pairPlacements(sc.Target, placement, n, pl); err != nil {
			return 0, false, fmt.Errorf("scenario %s: %w", sc.Name, err)
		}
	}
	res.Skipped = skipped
	return r.addResult(res), skipped == "", nil
}
