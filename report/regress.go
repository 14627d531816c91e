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
	Unpaired    []string     `json:"unpaired"` // scenarios or cells found in only one run
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
	bs, cs := scenarioNames(base), scenarioNames(cur)
	pairs := map[string]string{} // new scenario → base scenario
	if len(bs) == 1 && len(cs) == 1 {
		pairs[cs[0]] = bs[0]
	} else {
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
	}
	var judged []stats.Verdict // every judged comparison, in order
	var found []Regression     // the regression each would be
	baseRes := map[string]results.Result{}
	for _, r := range base.Results {
		baseRes[regressKey(r.Scenario, r)] = r
	}
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
		bser, err := results.Metrics(br)
		if err != nil {
			return chk, fmt.Errorf("base run: %w", err)
		}
		cser, err := results.Metrics(r)
		if err != nil {
			return chk, fmt.Errorf("new run: %w", err)
		}
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
	for i, reg := range gateDecide(judged, pct) {
		if reg {
			chk.Regressions = append(chk.Regressions, found[i])
		}
	}
	return chk, nil
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
