package suite

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cnibench/cnibench/results"
)

// Toggle is a part of one target that a twin scenario switches on for its
// samples (a NetworkPolicy, Hubble): a cluster cannot be two clusters, so
// the same one is measured with and without the part, round by round.
type Toggle interface {
	Part() string
	// How says what switching does, for the results.
	How() string
	// Restarts says switching restarts part of the target (Cilium's
	// agents): it is then switched once a round, not around every
	// sample.
	Restarts() bool
	// Check proves, before anything is measured, that the part can be
	// switched and says whether it is on now; an error refuses the twin
	// with its reason. It leaves a part that does not restart off.
	Check(ctx context.Context) (on bool, proof string, err error)
	// Set switches the part on or off and proves the state reached.
	Set(ctx context.Context, on bool) (proof string, err error)
}

// Twin is a scenario measured with its toggle on; the base scenario is
// measured with every toggle off.
type Twin struct {
	Scenario string
	Toggle   Toggle
}

// Twins is the schedule of twin scenarios on one target. Each round
// measures every scenario once, in a segment of its own (every test and
// placement of the plan), and the segments' order reverses every round
// (ABBA: base, cheap twins, restarting twins | the reverse | …): a part
// that restarts the target is switched once a round, a twin is measured
// first after a switch as often as last, and the statistics pair the
// twins by round as they do any scenarios.
type Twins struct {
	Base  string
	Twins []Twin
	// NotMeasured are parts the caller knows cannot apply (said with the
	// questions they would have answered); refused twins join them.
	NotMeasured []results.NotMeasured

	states []*twinState
	index  map[string][]int // scenario → Result indices, in (test, placement) order
	startB bool             // round 1 starts with the restarting twins (one is on already)
}

type twinState struct {
	Twin
	on  bool
	rec *results.TwinPart
}

// Estimate implements Schedule: every sample of the plan on the base and
// each twin (switching a part between segments left out, as setup).
func (*Twins) Estimate(p *Plan, scenarios []string) time.Duration {
	return p.EstimateOn(scenarios)
}

// Order implements Schedule.
func (*Twins) Order() string {
	return "rounds, each a segment per twin scenario (every test and placement), the segments' order reversed every round (ABBA); a part is switched and proved between segments"
}

// Prepare checks every twin's part (a refused twin is not measured, with
// its reason), asks each question of a part not measured with why, and
// makes the Results of the base and the twins left.
func (s *Twins) Prepare(ctx context.Context, r *Runner) (int, error) {
	byName := map[string]Scenario{}
	for _, sc := range r.Scenarios {
		byName[sc.Name] = sc
	}
	base, ok := byName[s.Base]
	if !ok {
		return 0, fmt.Errorf("twins: no base scenario %q", s.Base)
	}
	rec := &results.Twins{NotMeasured: slices.Clone(s.NotMeasured)}
	r.run.Twins = rec
	s.states = nil
	kept := []Scenario{base}
	for _, tw := range s.Twins {
		sc, ok := byName[tw.Scenario]
		if !ok {
			return 0, fmt.Errorf("twins: no scenario %q for part %s", tw.Scenario, tw.Toggle.Part())
		}
		part := &results.TwinPart{Part: tw.Toggle.Part(), Scenario: tw.Scenario, How: tw.Toggle.How(), Restarts: tw.Toggle.Restarts()}
		r.progress("%s: checking that %s can be switched … ", tw.Scenario, part.Part)
		start := time.Now()
		on, proof, err := tw.Toggle.Check(ctx)
		if ctx.Err() != nil {
			r.progress("interrupted\n")
			return 0, ctx.Err()
		}
		part.Switches = append(part.Switches, switchRecord(0, on, start, proof, err))
		if err != nil {
			r.progress("refused: %s\n", oneLineText(err.Error()))
			rec.NotMeasured = append(rec.NotMeasured, results.NotMeasured{Part: part.Part, Reason: oneLineText(err.Error())})
			continue
		}
		r.progress("%s\n", proof)
		part.Original = on
		rec.Parts = append(rec.Parts, *part)
		s.states = append(s.states, &twinState{Twin: tw, on: on})
		kept = append(kept, sc)
	}
	for i := range s.states {
		s.states[i].rec = &rec.Parts[i]
	}
	if len(s.states) == 0 {
		return 0, fmt.Errorf("no twin of %s can be measured: %s", s.Base, notMeasuredText(rec.NotMeasured))
	}
	r.Scenarios = kept
	qs := slices.Clone(r.Plan.Questions)
	for i, q := range qs {
		if q.A == s.Base && !slices.ContainsFunc(kept, func(sc Scenario) bool { return sc.Name == q.B }) {
			qs[i].NotMeasured = reasonFor(rec.NotMeasured, strings.TrimPrefix(q.B, s.Base+"+"))
		}
	}
	r.Plan.Questions, r.run.Plan.Questions = qs, qs
	s.startB = slices.ContainsFunc(s.states, func(st *twinState) bool { return st.Toggle.Restarts() && st.on })
	total, err := s.results(r)
	if err != nil {
		return 0, err
	}
	rec.Design = s.design(r)
	if err := checkAuto(r); err != nil {
		return 0, err
	}
	return total, nil
}

// results makes one Result per (test, placement, scenario), as Rounds
// does; a placement or test the target cannot host is skipped.
func (s *Twins) results(r *Runner) (int, error) {
	s.index = map[string][]int{}
	total := 0
	for _, spec := range r.Plan.Specs {
		for _, name := range r.Plan.Placements {
			for _, sc := range r.Scenarios {
				i, measured, err := r.prepareResult(spec, name, sc)
				if err != nil {
					return 0, err
				}
				s.index[sc.Name] = append(s.index[sc.Name], i)
				if measured {
					total += r.Plan.Rounds
				}
			}
		}
	}
	return total, nil
}

// segments are the scenarios in a round's order: the base, the twins that
// switch without a restart, then those that restart; reversed every other
// round, and in round 1 when a restarting part is on already.
func (s *Twins) segments(round int) []string {
	out := []string{s.Base}
	for _, restarts := range []bool{false, true} {
		for _, st := range s.states {
			if st.Toggle.Restarts() == restarts {
				out = append(out, st.Scenario)
			}
		}
	}
	if (round%2 == 0) != s.startB {
		slices.Reverse(out)
	}
	return out
}

// design says, for the results, how the rounds were laid out and paired.
func (s *Twins) design(r *Runner) string {
	var order []string
	for round := 1; round <= min(r.Plan.Rounds, 2); round++ {
		order = append(order, strings.Join(s.segments(round), " "))
	}
	var how []string
	for _, st := range s.states {
		if st.Toggle.Restarts() {
			how = append(how, fmt.Sprintf("%s restarts part of the target, so it is switched once a round at most (%d switches for %d rounds, and the target's close restores it as it was)", st.Toggle.Part(), r.Plan.Rounds, r.Plan.Rounds))
		} else {
			how = append(how, fmt.Sprintf("%s is switched on before its segment and off after it", st.Toggle.Part()))
		}
	}
	return fmt.Sprintf("twins on one target, ABBA by round: each round measures every scenario once in a segment of its own, the segments' order reversed every round (%s | …); %s; every switch is proved before the next sample; the statistics pair the twins by round",
		strings.Join(order, " | "), strings.Join(how, "; "))
}

// Measure implements Schedule. With --rounds auto it stops after the
// first round (fifth or later) at which every question is conclusive.
func (s *Twins) Measure(ctx context.Context, r *Runner) error {
	for round := 1; round <= r.Plan.Rounds; round++ {
		for _, name := range s.segments(round) {
			if err := s.switchTo(ctx, r, round, name); err != nil {
				return err
			}
			i := 0
			for _, spec := range r.Plan.Specs {
				for _, pl := range r.Plan.Placements {
					res := s.index[name][i]
					i++
					if r.run.Results[res].Skipped != "" {
						continue
					}
					if err := r.take(ctx, s.scenario(r, name), res, round, fmt.Sprintf("round %d %-18s %-30s ", round, spec.Name, name+" "+pl)); err != nil {
						return err
					}
				}
			}
		}
		if autoDone(r, round) || round == r.Plan.Rounds {
			// Parts that switch cheaply end off; a restarting one is put
			// back as it was by the target's close.
			return s.switchTo(ctx, r, round, "")
		}
	}
	return nil
}

// switchTo sets every part for scenario name's segment: its own part on,
// every other off (offs first, so no two parts are ever on together).
// name "" turns off the parts that do not restart.
func (s *Twins) switchTo(ctx context.Context, r *Runner, round int, name string) error {
	for _, wantOn := range []bool{false, true} {
		for _, st := range s.states {
			want := st.Scenario == name
			if want != wantOn || st.on == want || (name == "" && st.Toggle.Restarts()) {
				continue
			}
			if err := s.set(ctx, r, round, st, want); err != nil {
				return err
			}
		}
	}
	return nil
}

// set switches one part and records the switch and its proof.
func (s *Twins) set(ctx context.Context, r *Runner, round int, st *twinState, on bool) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	r.progress("round %d: switching %s %s … ", round, st.Toggle.Part(), onOff(on))
	start := time.Now()
	proof, err := st.Toggle.Set(ctx, on)
	st.rec.Switches = append(st.rec.Switches, switchRecord(round, on, start, proof, err))
	if err != nil {
		if ctx.Err() != nil {
			r.progress("interrupted\n")
			return ctx.Err()
		}
		r.progress("failed\n")
		return fmt.Errorf("round %d: switching %s %s: %w", round, st.Toggle.Part(), onOff(on), err)
	}
	st.on = on
	r.progress("%s\n", proof)
	return nil
}

func (s *Twins) scenario(r *Runner, name string) Scenario {
	for _, sc := range r.Scenarios {
		if sc.Name == name {
			return sc
		}
	}
	return Scenario{}
}

func switchRecord(round int, on bool, start time.Time, proof string, err error) results.TwinSwitch {
	sw := results.TwinSwitch{Round: round, On: on, Start: start.UTC(), Seconds: time.Since(start).Seconds(), Proof: proof}
	if err != nil {
		sw.Error = oneLineText(err.Error())
	}
	return sw
}

func onOff(on bool) string {
	if on {
		return "on"
	}
	return "off"
}

// reasonFor is why part was not measured.
func reasonFor(nm []results.NotMeasured, part string) string {
	for _, n := range nm {
		if n.Part == part {
			return n.Reason
		}
	}
	return "not measured by this run"
}

func notMeasuredText(nm []results.NotMeasured) string {
	var parts []string
	for _, n := range nm {
		parts = append(parts, n.Part+": "+n.Reason)
	}
	return strings.Join(parts, "; ")
}

// oneLineText keeps an error on one line.
func oneLineText(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
