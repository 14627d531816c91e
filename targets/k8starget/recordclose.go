package k8starget

import (
	"slices"

	"github.com/cnibench/cnibench/results"
)

// RecordClose writes into a run what Close did, so the results are final
// only after it: the scenario's target details as they are after Close (the
// sweep's dummies removed, and how long that took) and, on its sweeps, a
// cluster change that --allow-cluster-changes made and Close reverted.
func (t *Target) RecordClose(run *results.Run, scenario string) {
	setScenarioDetails(run, scenario, t.Details())
	if t.restored != "" && !slices.Contains(run.Notes, t.restored) {
		run.Notes = append(run.Notes, t.restored)
	}
	if ch := t.ClusterChange(); ch != nil {
		for i := range run.Sweeps {
			if run.Sweeps[i].Scenario == scenario {
				run.Sweeps[i].Notes = append(run.Sweeps[i].Notes, "--allow-cluster-changes: "+ch.String())
			}
		}
	}
}

// setScenarioDetails replaces a scenario's target details (and the run's
// target, the first scenario's).
func setScenarioDetails(run *results.Run, scenario string, d map[string]any) {
	for i := range run.Scenarios {
		if run.Scenarios[i].Name == scenario {
			run.Scenarios[i].Target.Details = d
		}
	}
	if len(run.Scenarios) > 0 {
		run.Target = run.Scenarios[0].Target
	}
}
