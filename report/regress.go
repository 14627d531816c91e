package report

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/cnibench/cnibench/results"
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
	Text      string  `json:"text"`      // the verdict, as stats.Compare words it
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

// Regressions compares every judged metric of every (scenario, test,
// placement, Service-scale step) the two runs share, new against base, and lists those that
// are significantly worse (stats.Compare) by more than pct percent.
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
			if !m.Judged() || bm == nil || len(m.Values) == 0 || len(bm.Values) == 0 {
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
			worse := v.Significant && v.Better == "a"
			chk.Judged++
			// A regression: the interval's bound nearest no change is
			// beyond pct in the bad direction, so the data say "worse by
			// more than pct", not just "worse, and the estimate is past pct".
			if worse && min(math.Abs(v.Lo), math.Abs(v.Hi)) > pct {
				chk.Regressions = append(chk.Regressions, Regression{
					Scenario: columnLabel(cur, r.Scenario), Test: r.Test, Placement: r.Placement.Name(), Services: r.Services,
					Metric: m.Name, Unit: m.Unit, Base: bm.Display, New: m.Display, DeltaPct: v.DeltaPct,
					Text: strings.TrimPrefix(v.Text, "b is "),
				})
			}
		}
	}
	return chk, nil
}
