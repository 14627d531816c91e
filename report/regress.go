package report

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/cnibench/cnibench/results"
	"github.com/cnibench/cnibench/stats"
)

// Regression is one metric that got significantly worse from a base run
// to a new run by more than the allowed percentage.
type Regression struct {
	Scenario  string  `json:"scenario"`
	Test      string  `json:"test"`
	Placement string  `json:"placement"`
	Services  int     `json:"services,omitempty"` // a Service-scale step's dummy count
	Metric    string  `json:"metric"`
	Unit      string  `json:"unit"`
	Base      float64 `json:"base"` // displayed values
	New       float64 `json:"new"`
	DeltaPct  float64 `json:"delta_pct"` // of the compared values (for loss: of the delivered share)
	Text      string  `json:"text"`      // the verdict, as stats words it
}

func (r Regression) String() string {
	at := ""
	if r.Services > 0 {
		at = fmt.Sprintf(" at %d Services", r.Services)
	}
	if r.Metric == "rounds" {
		return fmt.Sprintf("%s %s %s%s: %s", r.Scenario, r.Test, r.Placement, at, r.Text)
	}
	return fmt.Sprintf("%s %s %s%s %s: %s → %s %s, %s", r.Scenario, r.Test, r.Placement, at, r.Metric,
		fmtNum(r.Base), fmtNum(r.New), r.Unit, r.Text)
}

// regressKey pairs a result of the new run with the base run's: scenario,
// test, placement and, in a Service-scale sweep, the step's Service count
// (without it every step of the new run met the base's last step).
func regressKey(scenario string, r results.Result) string {
	return scenario + "\x00" + sectionKey(r.Test, r.Placement.Name()) + "\x00" + strconv.Itoa(r.Services)
}

// stepText names a sweep step in messages ("" outside a sweep).
func stepText(run *results.Run, r results.Result) string {
	if len(run.Sweeps) == 0 {
		return ""
	}
	return fmt.Sprintf(" at %d Services", r.Services)
}

// RegressCheck is the outcome of Regressions.
type RegressCheck struct {
	Regressions []Regression `json:"regressions"`
	Judged      int          `json:"judged"`   // metric comparisons that got a verdict
	TooFew      int          `json:"too_few"`  // comparisons without a verdict: too few samples
	Unpaired    []string     `json:"unpaired"` // scenarios or cells found only in the new run
	// Missing is what only the base run has: a scenario, a (test,
	// placement) cell, a sweep step or a metric NEW never measured. A new
	// run that stopped early (a sweep cut at --max-step-time) is missing
	// exactly what got worse, so the gate fails on these unless told to
	// allow them.
	Missing []string `json:"missing"`
}

// Regressions compares every headline metric (opt.AllMetrics: every
// judged one) of every (scenario, test, placement, Service-scale step) the
// two runs share, new against base (unpaired), and lists the regressions
// gateDecide finds.
// Scenarios pair by name; two single-scenario runs pair whatever their
// names.
func Regressions(base, cur *results.Run, pct float64, opt Options) (RegressCheck, error) {
	opt = opt.withDefaults()
	var chk RegressCheck
	bs := scenarioNames(base)
	pairs := pairScenarios(bs, cur, &chk)
	var judged []stats.Verdict // every judged comparison, in order
	var found []Regression     // the regression each would be
	baseRes := map[string]results.Result{}
	for _, r := range base.Results {
		baseRes[regressKey(r.Scenario, r)] = r
	}
	seen := map[string]bool{}
	for _, r := range cur.Results {
		bsc, ok := pairs[r.Scenario]
		if !ok {
			continue
		}
		br, ok := baseRes[regressKey(bsc, r)]
		if !ok {
			chk.Unpaired = append(chk.Unpaired, fmt.Sprintf("%s %s %s%s is only in the new run", columnLabel(cur, r.Scenario), r.Test, r.Placement.Name(), stepText(cur, r)))
			continue
		}
		seen[regressKey(bsc, r)] = true
		bser, err := results.Metrics(br)
		if err != nil {
			return chk, fmt.Errorf("base run: %w", err)
		}
		cser, err := results.Metrics(r)
		if err != nil {
			return chk, fmt.Errorf("new run: %w", err)
		}
		cell := fmt.Sprintf("%s %s %s%s", columnLabel(cur, r.Scenario), r.Test, r.Placement.Name(), stepText(cur, r))
		if reg, ok := lostRounds(columnLabel(cur, r.Scenario), bser, r, cser); ok {
			chk.Regressions = append(chk.Regressions, reg)
		}
		if f := failedMore(cell, bser, cser); f != "" {
			chk.Missing = append(chk.Missing, f)
		}
		chk.Missing = append(chk.Missing, metricsMissing(cell, bser, cser, opt)...)
		for i := range cser.Metrics {
			m := &cser.Metrics[i]
			bm := bser.Metric(m.Name)
			if !m.Judged() || bm == nil || len(m.Values) == 0 || len(bm.Values) == 0 || (!opt.AllMetrics && !m.Headline) {
				continue
			}
			v := compare(bm, m, opt, false) // separate runs
			switch kindOf(v, opt) {
			case VerdictTooFew:
				chk.TooFew++
				continue
			case VerdictNA:
				continue
			}
			chk.Judged++
			judged = append(judged, v)
			found = append(found, Regression{
				Scenario: columnLabel(cur, r.Scenario), Test: r.Test, Placement: r.Placement.Name(), Services: r.Services,
				Metric: m.Name, Unit: m.Unit, Base: bm.Display, New: m.Display, DeltaPct: v.DeltaPct,
				Text: strings.TrimPrefix(v.Text, "b is "),
			})
		}
	}
	chk.Missing = append(missingInNew(base, bs, pairs, baseRes, seen), chk.Missing...)
	for i, reg := range gateDecide(judged, pct) {
		if reg {
			chk.Regressions = append(chk.Regressions, found[i])
		}
	}
	return chk, nil
}

// pairScenarios maps each scenario of the new run onto the base run's of
// the same name (two single-scenario runs pair whatever their names), and
// notes in chk the new run's scenarios the base lacks.
func pairScenarios(bs []string, cur *results.Run, chk *RegressCheck) map[string]string {
	cs := scenarioNames(cur)
	pairs := map[string]string{} // new scenario → base scenario
	if len(bs) == 1 && len(cs) == 1 {
		pairs[cs[0]] = bs[0]
		return pairs
	}
	inBase := map[string]bool{}
	for _, s := range bs {
		inBase[s] = true
	}
	for _, s := range cs {
		if inBase[s] {
			pairs[s] = s
		} else {
			chk.Unpaired = append(chk.Unpaired, "scenario "+columnLabel(cur, s)+" is only in the new run")
		}
	}
	return pairs
}

// metricsMissing lists the gated metrics of a cell that the base run
// measured and the new run has no value for.
func metricsMissing(cell string, bser, cser results.Series, opt Options) []string {
	var out []string
	for i := range bser.Metrics {
		bm := &bser.Metrics[i]
		if bm.Judged() && len(bm.Values) > 0 && (opt.AllMetrics || bm.Headline) {
			if m := cser.Metric(bm.Name); m == nil || len(m.Values) == 0 {
				out = append(out, fmt.Sprintf("%s: %s has no value in the new run", cell, bm.Name))
			}
		}
	}
	return out
}

// missingInNew lists the base run's scenarios and cells (a sweep's steps
// included) that the new run does not have.
func missingInNew(base *results.Run, baseScenarios []string, pairs map[string]string, baseRes map[string]results.Result, seen map[string]bool) []string {
	paired := map[string]bool{}
	for _, b := range pairs {
		paired[b] = true
	}
	var out []string
	for _, s := range baseScenarios {
		if !paired[s] {
			out = append(out, "scenario "+columnLabel(base, s)+" is only in the base run")
		}
	}
	for _, r := range base.Results {
		k := regressKey(r.Scenario, r)
		if !paired[r.Scenario] || seen[k] || r.Skipped != "" {
			continue
		}
		if _, ok := baseRes[k]; ok {
			out = append(out, fmt.Sprintf("%s %s %s%s is only in the base run", columnLabel(base, r.Scenario), r.Test, r.Placement.Name(), stepText(base, r)))
		}
	}
	return out
}

// lostRounds is a regression when a larger share of the new run's rounds
// delivered nothing (a rate or throughput of 0: the worst value, which no
// interval of the other rounds may hide) than of the base run's.
func lostRounds(scenario string, bser results.Series, r results.Result, cser results.Series) (Regression, bool) {
	bz, nz := zeroRounds(bser), zeroRounds(cser)
	bn, nn := max(bser.Samples-bser.Failed, 1), max(cser.Samples-cser.Failed, 1)
	if nz == 0 || float64(nz)/float64(nn) <= float64(bz)/float64(bn) {
		return Regression{}, false
	}
	return Regression{Scenario: scenario, Test: r.Test, Placement: r.Placement.Name(), Services: r.Services, Metric: "rounds",
		Base: float64(bz), New: float64(nz), Text: fmt.Sprintf("%d of %d rounds delivered nothing (base: %d of %d)", nz, nn, bz, bn)}, true
}

// failedMore says so when a larger share of the new run's samples failed
// than of the base run's: something NEW could not measure, listed with
// what only BASE has (an error is not a measured regression, and
// --allow-missing passes it).
func failedMore(cell string, bser, cser results.Series) string {
	if cser.Failed == 0 || cser.Samples == 0 || (bser.Samples > 0 && float64(cser.Failed)/float64(cser.Samples) <= float64(bser.Failed)/float64(bser.Samples)) {
		return ""
	}
	return fmt.Sprintf("%s: %d of %d samples failed in the new run (base: %d of %d; first: %s)", cell, cser.Failed, cser.Samples, bser.Failed, bser.Samples, squash(cser.FirstError))
}

// zeroRounds counts the distinct rounds in which a higher-is-better
// metric was 0.
func zeroRounds(s results.Series) int {
	rounds := map[int]bool{}
	for _, m := range s.Metrics {
		if m.Better != results.HigherIsBetter || m.Complement != "" {
			continue
		}
		for i, v := range m.Values {
			if v == 0 && i < len(m.Rounds) {
				rounds[m.Rounds[i]] = true
			}
		}
	}
	return len(rounds)
}

// gateDecide says which judged comparisons (new against base) are
// regressions: significantly worse with the interval's bound nearest no
// change beyond pct in the bad direction, so the data say "worse by more
// than pct", not only the estimate. That margin is the gate's control of
// its many comparisons: with identical code, ±5% noise, 5 rounds a side
// and 50 metrics, a 5% gate fails 0.1% of the time (gate_test.go). A
// false-discovery control on top would blind it: at 5 rounds a side the
// exact rank test's smallest p-value (2/252) cannot pass Benjamini–Hochberg
// among more than 6 comparisons.
func gateDecide(vs []stats.Verdict, pct float64) []bool {
	out := make([]bool, len(vs))
	for i, v := range vs {
		worse := v.Significant && v.Better == "a"
		out[i] = worse && min(math.Abs(v.Lo), math.Abs(v.Hi)) > pct
	}
	return out
}
