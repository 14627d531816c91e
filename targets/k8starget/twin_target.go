package k8starget

import "github.com/cnibench/cnibench/results"

// TwinTarget is the run's Target as one twin scenario sees it: the same
// cluster and agents, its part named in the details, and its notes said
// once, by the base scenario's Target.
type TwinTarget struct {
	*Target
	Part string
}

// Details implements suite.Target.
func (tt *TwinTarget) Details() map[string]any {
	d := tt.Target.Details()
	d["twin_part"] = tt.Part
	return d
}

// Notes implements suite.Noter: none of its own.
func (tt *TwinTarget) Notes() []string { return nil }

// RecordClose records the twin's details as they are after Close.
func (tt *TwinTarget) RecordClose(run *results.Run, scenario string) {
	setScenarioDetails(run, scenario, tt.Details())
}
