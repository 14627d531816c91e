package report

import (
	"strings"
	"testing"

	"github.com/cnibench/cnibench/results"
)

// A run of one scenario compares nothing, and says how to compare: on the
// lab another scenario beside it, on a cluster (one scenario) another run.
func TestOneScenarioSaysHowToCompare(t *testing.T) {
	for _, c := range []struct{ kind, want string }{
		{"lab", "--scenarios iptables,ebpf"},
		{"k8s", "compare two runs with `cnibench compare DIR1 DIR2`"},
	} {
		run := loadFixture(t)
		first := run.Scenarios[0]
		first.Target.Kind = c.kind
		run.Scenarios = []results.Scenario{first}
		var kept []results.Result
		for _, r := range run.Results {
			if r.Scenario == first.Name {
				kept = append(kept, r)
			}
		}
		run.Results = kept
		rep, err := Build([]Input{{Run: run}}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Answers) == 0 || !strings.Contains(rep.Answers[0].Text, c.want) {
			t.Errorf("%s: answers %+v, want one saying %q", c.kind, rep.Answers, c.want)
		}
	}
}
