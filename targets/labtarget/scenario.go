package labtarget

import (
	"github.com/cnibench/cnibench/lab"
	"github.com/cnibench/cnibench/results"
	"github.com/cnibench/cnibench/targets/labtarget/part"
	_ "github.com/cnibench/cnibench/targets/labtarget/parts/all" // registers every scenario part
)

// A scenario is a lab configuration `run --scenarios` knows: its parts
// ("vxlan+ebpf+policy"), each registered in package part (parts/all lists
// them), configured on top of the run's flags. Each scenario gets a lab
// of its own, named after its parts' tokens, so all of them stay up while
// rounds alternate between them.

// ScenarioNames lists the known scenario parts (policy-N stands for
// every policy-scale part, cc-ALGO and mtu-N for every such tuning).
func ScenarioNames() []string { return part.Names() }

// ScenarioConfig is a scenario's finished configuration on top of base
// (the run's lab flags): its lab config, named after it, and its parts,
// which Config.Parts hands to Open.
func ScenarioConfig(name results.ScenarioName, base lab.Config) (part.Scenario, error) {
	return part.Configure(name, base)
}
