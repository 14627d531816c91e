package suite

import "github.com/cnibench/cnibench/results"

// Checker is a Target that proved its scenario's parts on before
// measuring (the lab's policy enforcing, a tuning read back): the run
// records the checks with the scenario, and the report shows them.
type Checker interface {
	Checks() []results.Check
}

// targetChecks are sc's checks, none when its target makes none.
func targetChecks(sc Scenario) []results.Check {
	if c, ok := sc.Target.(Checker); ok {
		return c.Checks()
	}
	return nil
}
