package report

import (
	"fmt"
	"strconv"
	"time"

	"github.com/cnibench/cnibench/results"
)

// What each run was: its provenance, plan and scenarios, as the
// environment and plan sections show them.

// RunInfo is one run's provenance.
type RunInfo struct {
	Label       string              `json:"label"`
	RunID       string              `json:"run_id"`
	Status      string              `json:"status"`
	Error       string              `json:"error,omitempty"`
	Teardown    string              `json:"teardown,omitempty"` // what failed closing the targets
	Start       time.Time           `json:"start"`
	End         time.Time           `json:"end"`
	Tool        results.Tool        `json:"tool"`
	Environment results.Environment `json:"environment"`
	Plan        results.Plan        `json:"plan"`
	Scenarios   []ScenarioInfo      `json:"scenarios"`
	// Notes are the run's own remarks (results.Run.Notes), e.g. why
	// datapath CPU and memory were not recorded.
	Notes []string `json:"notes,omitempty"`
	// Twins say how a run of twins on one target was laid out, each
	// part's switches and proof, and the parts not measured.
	Twins []string `json:"twins,omitempty"`
}

// ScenarioInfo is a scenario's target with its details flattened to
// strings (topology left out: it is in results.json).
type ScenarioInfo struct {
	Name    string            `json:"name"`
	Kind    string            `json:"kind"`
	Details map[string]string `json:"details"`
	// Sysctls are the endpoints' effective sysctls as their agents read
	// them, on one line (sysctls.go); "" when not recorded.
	Sysctls string `json:"sysctls,omitempty"`
	// Checks are how the scenario's parts proved themselves on before
	// measuring, a line per label (checks.go); none without parts.
	Checks []CheckLine `json:"checks,omitempty"`
}

func runInfo(run *results.Run, label string) RunInfo {
	ri := RunInfo{Label: label, RunID: run.RunID, Status: run.Status, Error: squash(run.Error), Teardown: squash(run.Teardown),
		Start: run.Start, End: run.End, Tool: run.Tool, Environment: run.Environment, Plan: run.Plan, Notes: run.Notes, Twins: twinsLines(run)}
	scs := run.Scenarios
	if len(scs) == 0 {
		scs = []results.Scenario{{Name: columnLabel(run, ""), Target: run.Target}}
	}
	for _, sc := range scs {
		ri.Scenarios = append(ri.Scenarios, ScenarioInfo{Name: sc.Name, Kind: sc.Target.Kind, Details: flatten(sc.Target.Details),
			Sysctls: sysctlsText(run, sc.Target.Details), Checks: checkLines(sc)})
	}
	return ri
}

// flatten turns target details into strings: scalars as they are, maps
// one level deep as key.sub (sysctls), lists and deeper structures
// (topology) left to results.json.
func flatten(d map[string]any) map[string]string {
	out := map[string]string{}
	for k, v := range d {
		if checkDetails[k] {
			continue // lines of their own (ScenarioInfo.Checks)
		}
		switch x := v.(type) {
		case map[string]any:
			for sk, sv := range x {
				if s, ok := scalar(sv); ok {
					out[k+"."+sk] = s
				}
			}
		case map[string]string:
			for sk, sv := range x {
				out[k+"."+sk] = sv
			}
		default:
			if s, ok := scalar(v); ok {
				out[k] = s
			}
		}
	}
	return out
}

func scalar(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case bool:
		return strconv.FormatBool(x), true
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64), true
	case int, int64, int32, uint, uint64, uint32:
		return fmt.Sprint(x), true
	}
	return "", false
}
