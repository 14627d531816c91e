package suite

import (
	"fmt"
	"math"
	"slices"

	"github.com/cnibench/cnibench/results"
	"github.com/cnibench/cnibench/stats"
)

// --rounds auto[:MAX]: after the fifth round, the Rounds schedule asks
// after every round whether each of the plan's questions (results.Plan.
// Questions) that this run can answer is conclusive: its paired verdict at
// the sequential level (stats.SequentialLevel: stricter per look, so that
// looking every round keeps false verdicts at 5%) lies beyond the minimum
// effect or wholly inside it. When all are, the rounds stop; else they go
// on to MAX. The report judges the questions at the same level.

// autoQuestions are the indices of the plan's questions this run can
// answer: both scenarios, the test and the placement are in it.
func autoQuestions(r *Runner) []int {
	var names []string
	for _, sc := range r.Scenarios {
		names = append(names, sc.Name)
	}
	var tests []string
	for _, s := range r.Plan.Specs {
		tests = append(tests, s.Name)
	}
	var out []int
	for i, q := range r.Plan.Questions {
		if slices.Contains(names, q.A) && slices.Contains(names, q.B) && slices.Contains(tests, q.Test) && slices.Contains(r.Plan.Placements, q.Placement) &&
			!skipped(r.run, q.A, q) && !skipped(r.run, q.B, q) {
			out = append(out, i)
		}
	}
	return out
}

// skipped tells whether the run's result of a question's cell in one
// scenario was skipped by its target (no verdict can come of it).
func skipped(run *results.Run, scenario string, q results.Question) bool {
	if run == nil {
		return false
	}
	for _, res := range run.Results {
		if res.Scenario == scenario && res.Test == q.Test && res.Placement.Name() == q.Placement {
			return res.Skipped != ""
		}
	}
	return false
}

// checkAuto refuses --rounds auto on a run that asks no question it can
// answer, and readies the record.
func checkAuto(r *Runner) error {
	auto := r.Plan.Auto
	if auto == nil {
		return nil
	}
	if len(autoQuestions(r)) == 0 {
		return fmt.Errorf("--rounds auto: this run asks no question to answer (a profile's questions, e.g. --profile datapaths, need both their scenarios, test and placement in the run)")
	}
	auto.ConclusiveAt = make([]int, len(r.Plan.Questions))
	return nil
}

// autoDone records which questions are conclusive after round and says
// whether the rounds can stop. A question is conclusive as the report
// will judge it: its interval at the sequential level wholly inside the
// minimum effect, or beyond it and a discovery among the questions
// (Benjamini–Hochberg over their p-values scaled to 5%, as the report's
// questions family). ConclusiveAt keeps the round from which a question
// has stayed conclusive (0 while it is not).
func autoDone(r *Runner, round int) bool {
	auto := r.run.Plan.Auto
	if auto == nil || round < stats.MinAutoRounds {
		return false
	}
	qis := autoQuestions(r)
	verdicts := make([]stats.Verdict, len(qis))
	var ps []float64
	for i, qi := range qis {
		v, ok := questionVerdict(r.run, r.Plan.Questions[qi], auto.Level)
		verdicts[i] = v
		p := math.NaN()
		if ok && v.Tested {
			p = math.Min(1, v.P*(1-stats.DefaultLevel)/(1-auto.Level))
		}
		ps = append(ps, p)
	}
	disc := stats.BenjaminiHochberg(ps, stats.DefaultFDR)
	all := true
	for i, qi := range qis {
		v := verdicts[i]
		conclusive := stats.Conclusive(v, 0) && (!v.Significant || disc[i])
		switch {
		case !conclusive:
			auto.ConclusiveAt[qi] = 0
		case auto.ConclusiveAt[qi] == 0:
			auto.ConclusiveAt[qi] = round
		}
		all = all && conclusive
	}
	switch {
	case all:
		auto.Stopped = fmt.Sprintf("every question conclusive after %d rounds", round)
		r.run.Plan.Rounds = round
		r.progress("rounds auto: every question is conclusive after %d rounds (at most %d): stopping\n", round, auto.Max)
	case round >= auto.Max:
		auto.Stopped = fmt.Sprintf("%d rounds, the most asked, with not every question conclusive", round)
	}
	return all
}

// questionVerdict compares a question's two scenarios round by round on
// the rounds taken so far, at the given level.
func questionVerdict(run *results.Run, q results.Question, level float64) (stats.Verdict, bool) {
	find := func(sc string) *results.Metric {
		for _, res := range run.Results {
			if res.Scenario != sc || res.Test != q.Test || res.Placement.Name() != q.Placement {
				continue
			}
			s, err := results.Metrics(res)
			if err != nil {
				return nil
			}
			return s.Metric(q.Metric)
		}
		return nil
	}
	a, b := find(q.A), find(q.B)
	if a == nil || b == nil {
		return stats.Verdict{}, false
	}
	va, higher, noun := a.ComparedValues()
	vb, _, _ := b.ComparedValues()
	at := map[int]float64{}
	for i, r := range b.Rounds {
		at[r] = vb[i]
	}
	var pa, pb []float64
	for i, r := range a.Rounds {
		if y, ok := at[r]; ok {
			pa, pb = append(pa, va[i]), append(pb, y)
		}
	}
	return stats.ComparePaired(pa, pb, stats.CompareOptions{HigherIsBetter: higher, Noun: noun, Level: level}), true
}
