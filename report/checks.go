package report

import (
	"strings"

	"github.com/cnibench/cnibench/results"
)

// CheckLine is a scenario's checks of one label on one line, "Label:
// text; text": how its parts proved themselves on before measuring (the
// tunings of a scenario share one line, as each writes a check).
type CheckLine struct {
	Label string `json:"label"`
	Text  string `json:"text"`
}

// checkLines groups a scenario's checks by label, in the order the run
// made them; a file written before runs recorded checks has them rebuilt
// from its details (legacyChecks).
func checkLines(sc results.Scenario) []CheckLine {
	checks := sc.Checks
	if checks == nil {
		checks = legacyChecks(sc.Target.Details)
	}
	var out []CheckLine
	at := map[string]int{}
	for _, c := range checks {
		if i, ok := at[c.Label]; ok {
			out[i].Text += "; " + c.Text
			continue
		}
		at[c.Label] = len(out)
		out = append(out, CheckLine{Label: c.Label, Text: c.Text})
	}
	return out
}

// checkDetails are the details keys of the built-in parts' records, shown
// as check lines instead of flattened into the details.
var checkDetails = map[string]bool{"policy": true, "l7": true, "flows": true, "tuning": true, "encryption": true}

// legacyChecks rebuilds the checks of a results file written before runs
// recorded them, from the built-in parts' records in its details, in the
// order the report showed them then.
func legacyChecks(details map[string]any) []results.Check {
	var out []results.Check
	if p, ok := detail[results.PolicyCheck](details, "policy"); ok && p.Enforcer != "" {
		out = append(out, results.Check{Part: "policy", Label: results.PolicyLabel, Text: p.Text()})
	}
	if c, ok := detail[results.FlowsCheck](details, "flows"); ok && c.Mechanism != "" {
		out = append(out, results.Check{Part: "flows", Label: results.FlowsLabel, Text: c.Text()})
	}
	if c, ok := detail[results.EncryptionCheck](details, "encryption"); ok && c.Mode != "" {
		out = append(out, results.Check{Part: c.Mode, Label: results.EncryptionLabel, Text: c.Text()})
	}
	if cs, ok := detail[[]results.TuningCheck](details, "tuning"); ok {
		for _, c := range cs {
			out = append(out, results.Check{Part: c.Name, Label: results.TuningLabel, Text: c.Text()})
		}
	}
	if c, ok := detail[results.L7Check](details, "l7"); ok && c.Model != "" {
		part := "l7-" + strings.TrimPrefix(strings.ReplaceAll(c.Model, "per-node-egress", "egress"), "per-")
		out = append(out, results.Check{Part: part, Label: results.L7Label, Text: c.Text()})
	}
	return out
}
