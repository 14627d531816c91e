package suite

import (
	"fmt"
	"slices"
	"strings"

	"github.com/cnibench/cnibench/results"
	"github.com/cnibench/cnibench/stats"
)

// OnCluster fits the plan of a published report's profile whose columns
// are lab scenarios (Profile.OnCluster) to a cluster, which is measured as
// it is: one scenario. The cluster fills the column whose lab scenario
// models its datapath (model, e.g. "iptables" for kube-proxy iptables on
// natively routed pods; datapath says it in words); every other column's
// cell says what it needs, and the questions between columns go, as one
// run has one column. A model none of the columns has is a one-line error.
func OnCluster(p *Plan, model, datapath string) error {
	prof, err := LookupProfile(p.Profile)
	if err != nil || !prof.OnCluster || p.Reproduces == nil {
		return nil
	}
	column := ""
	var columns []string
	for _, c := range p.Reproduces.Cells {
		if c.Scenario == "" || c.Change || c.Services > 0 || slices.Contains(columns, c.Column+" ("+c.Scenario+")") {
			continue
		}
		columns = append(columns, c.Column+" ("+c.Scenario+")")
		if clusterModel(c.Scenario) == model {
			column = c.Column
		}
	}
	if column == "" {
		if model == "" {
			return fmt.Errorf("--profile %s on a cluster: its datapath (%s) is none of the report's columns (%s)", p.Profile, datapath, strings.Join(columns, ", "))
		}
		return fmt.Errorf("--profile %s on a cluster: its datapath (%s, the lab's %s) is none of the report's columns (%s)", p.Profile, datapath, model, strings.Join(columns, ", "))
	}
	rep := &results.Reproduction{Report: p.Reproduces.Report, Shapes: p.Reproduces.Shapes}
	for _, c := range p.Reproduces.Cells {
		switch {
		case c.NoEquivalent != "" || c.Scenario == "":
		case c.Change:
			c = noEquivalent(c.Row, c.Column, "a part added to the datapath: on a cluster, --profile security measures what it costs, as twins of the cluster (docs/k8s.md)")
		case c.Services > 0:
			c = noEquivalent(c.Row, c.Column, fmt.Sprintf("a row at %s Services, which run sweeps on the lab only: on a cluster, cnibench sweep --target k8s --profile %s creates the dummy Services (docs/service-scale.md)", stats.Thousands(c.Services), p.Profile))
		case clusterModel(c.Scenario) == model:
			c.Scenario = "" // the run's one scenario: the cluster
		default:
			c = noEquivalent(c.Row, c.Column, fmt.Sprintf("this cluster runs %s, the report's %s column; %s needs a cluster whose datapath the lab's %s models", datapath, column, c.Column, c.Scenario))
		}
		rep.Cells = append(rep.Cells, c)
	}
	p.Reproduces, p.Questions, p.ScenarioTests = rep, nil, nil
	return nil
}

// clusterModel is the cluster datapath (k8starget.LabModel) a lab
// scenario stands for: kube-proxy's iptables mode is "iptables" whichever
// backend its nodes' iptables writes, so the lab's iptables-legacy
// column is a kube-proxy iptables cluster's too.
func clusterModel(scenario string) string {
	return strings.ReplaceAll(scenario, "iptables-legacy", "iptables")
}
