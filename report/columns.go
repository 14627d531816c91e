package report

import (
	"fmt"

	"github.com/cnibench/cnibench/results"
)

// The report's columns: one per run × scenario, labelled so that every
// column has its own name.

// Column is one (run, scenario).
type Column struct {
	Label    string `json:"label"`
	Run      int    `json:"run"` // index into Runs
	RunID    string `json:"run_id"`
	Scenario string `json:"scenario"`
	// Against is the column this one's verdicts compare with: the first,
	// or a scenario it adds parts to (against.go).
	Against int `json:"against,omitempty"`
	// Adds is what this column's scenario adds to the one it is compared
	// with ("policy"), "" when it is compared with the first column as
	// another contender.
	Adds string `json:"adds,omitempty"`
	// parts are the scenario's parts as the run recorded them (against.go).
	parts results.ScenarioName
	// plan is the run's plan, which says the tests the column's scenario
	// was to measure (results.Plan.Measures).
	plan *results.Plan
}

// planned tells whether the column's run planned test in its scenario: a
// test section leaves out the columns that were never to measure it (a
// profile's added-part scenarios run one test), instead of calling them
// missing.
func (c Column) planned(test string) bool {
	return c.plan == nil || c.plan.Measures(c.Scenario, test)
}

// buildColumns adds the runs and a column per run × scenario to rep, and
// returns each column's results by section key and the section keys in
// first-seen order.
func buildColumns(rep *Report, in []Input) (colResults []map[string]results.Result, order []string) {
	seen := map[string]bool{}
	labels := map[string]int{}
	for ri, input := range in {
		run := input.Run
		label := input.Label
		if label == "" {
			label = run.RunID
		}
		rep.Runs = append(rep.Runs, runInfo(run, label))
		for _, sc := range scenarioNames(run) {
			col := Column{Run: ri, RunID: run.RunID, Scenario: sc, Label: columnLabel(run, sc), parts: scenarioParts(run, sc), plan: &run.Plan}
			if len(in) > 1 {
				col.Label = label
				if len(scenarioNames(run)) > 1 {
					col.Label = label + "/" + columnLabel(run, sc)
				}
			}
			if n := labels[col.Label]; n > 0 {
				labels[col.Label]++
				col.Label = fmt.Sprintf("%s#%d", col.Label, n+1)
			} else {
				labels[col.Label] = 1
			}
			m := map[string]results.Result{}
			for _, r := range run.Results {
				if r.Scenario != sc {
					continue
				}
				k := sectionKey(r.Test, sweepPlacement(run, r))
				m[k] = r
				if !seen[k] {
					seen[k] = true
					order = append(order, k)
				}
			}
			rep.Columns = append(rep.Columns, col)
			colResults = append(colResults, m)
		}
	}
	return colResults, order
}

// scenarioNames lists a run's scenarios: the declared ones, then any name
// only its results use (older runs have none: "").
func scenarioNames(run *results.Run) []string {
	var names []string
	seen := map[string]bool{}
	for _, sc := range run.Scenarios {
		if !seen[sc.Name] {
			seen[sc.Name] = true
			names = append(names, sc.Name)
		}
	}
	for _, r := range run.Results {
		if !seen[r.Scenario] {
			seen[r.Scenario] = true
			names = append(names, r.Scenario)
		}
	}
	return names
}

// scenarioParts are the parts of run's scenario named sc, as recorded
// (results.Scenario.ScenarioName reads older files); none for an unnamed one.
func scenarioParts(run *results.Run, sc string) results.ScenarioName {
	if sc == "" {
		return nil
	}
	for _, s := range run.Scenarios {
		if s.Name == sc {
			return s.ScenarioName()
		}
	}
	return results.Scenario{Name: sc}.ScenarioName()
}

// columnLabel names a scenario; results without one (single-scenario runs
// of older versions) are named after their lab or target kind.
func columnLabel(run *results.Run, sc string) string {
	if sc != "" {
		return sc
	}
	if l, ok := run.Target.Details["lab"].(string); ok && l != "" {
		return l
	}
	if run.Target.Kind != "" {
		return run.Target.Kind
	}
	return "run"
}
