package results

import (
	"github.com/cnibench/cnibench/datapath"
	"github.com/cnibench/cnibench/datapath/churn"
)

// Churn is a churn run's plan: every scenario keeps the same Services
// programmed; those whose name has the "churn" part are churned during
// their samples, the others measure the same load without churn.
type Churn struct {
	Options   churn.Options   `json:"options"`
	Scenarios []ChurnScenario `json:"scenarios"`
}

// ChurnScenario is how one scenario's steady state was programmed.
type ChurnScenario struct {
	Scenario string                `json:"scenario"`
	Datapath string                `json:"datapath"`
	Churned  bool                  `json:"churned"`
	Program  datapath.ProgramStats `json:"program"` // the full sync of the steady state
	Counts   datapath.Counts       `json:"counts"`  // what the kernel held after it
	Memory   datapath.Memory       `json:"memory"`  // the datapath's state, as the kernel reports it
	// Idle is a churn window without traffic (churned scenarios), before
	// the rounds: the sync loop's latency and CPU on an idle machine.
	Idle *churn.Result `json:"idle,omitempty"`
}
