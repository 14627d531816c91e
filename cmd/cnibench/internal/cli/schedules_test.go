package cli

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/cnibench/cnibench/results"
	"github.com/cnibench/cnibench/suite"
)

// toySchedule stands for a new schedule's suite file: it reprograms the
// Service datapath, measures every scenario beside a "+toy" twin and
// says its estimate (a fixed 42 s a scenario, so the header shows it).
type toySchedule struct{ *suite.Rounds }

func (toySchedule) Estimate(_ *suite.Plan, names []string) time.Duration {
	return time.Duration(len(names)) * 42 * time.Second
}
func (toySchedule) Reprograms() suite.Reprogramming {
	return suite.Reprogramming{Services: 7, Endpoints: 2, Verb: "toy"}
}
func (toySchedule) Expand(names []results.ScenarioName) []results.ScenarioName {
	var out []results.ScenarioName
	for _, n := range names {
		out = append(out, n, n.With("toy"))
	}
	return out
}

// toyFlags stands for its one CLI file: a flag, the plan's defaults.
type toyFlags struct{ level int }

func (f *toyFlags) register(fs *pflag.FlagSet) {
	fs.IntVar(&f.level, "toy-level", 1, "toy: how hard the toy plays")
}
func (f *toyFlags) resolve(_ *pflag.FlagSet, o suite.Options) (suite.Schedule, *suite.Plan, error) {
	if f.level < 1 {
		return nil, nil, fmt.Errorf("--toy-level must be at least 1, got %d", f.level)
	}
	plan, err := suite.ReprogramPlan(o, "toy", "it plays", []string{"TCP_RR"})
	return toySchedule{&suite.Rounds{}}, plan, err
}
func (f *toyFlags) about() string { return fmt.Sprintf("toy at level %d", f.level) }

// headerTarget prints, as a target's open does, the header line from what
// the request says of its schedule, and opens nothing.
type headerTarget struct{}

func (headerTarget) register(*pflag.FlagSet) {}
func (headerTarget) open(_ context.Context, req *runRequest) ([]suite.Scenario, error) {
	names := scenarioStrings(suite.ExpandScenarios(req.schedule, []results.ScenarioName{{"a"}}))
	rp := req.reprogramming()
	fmt.Fprintf(req.progress, "%s on %s, %d Services, %d rounds: about %s\n", req.about, strings.Join(names, ", "), rp.Services, req.plan.Rounds, req.estimate(names))
	return nil, nil
}

// A schedule registered in one place reaches its command, its flags (in
// its --help, hidden and refused elsewhere), run --tests, its defaults,
// its scenario expansion and its estimate, and the targets' flags of
// every schedule that reprograms apply to it.
func TestToySchedule(t *testing.T) {
	registerSchedule(scheduleEntry{name: "toy", rank: 3, title: "the toy schedule", hint: "cnibench toy", test: "toy", reprograms: true,
		use: "toy", short: "Toy schedule", flagHelp: reprogramFlagHelp("toy rounds"), new: func() scheduleKind { return &toyFlags{} }})
	registerTarget("header", "Header flags", func(*globals) targetKind { return headerTarget{} })
	t.Cleanup(func() { delete(scheduleRegistry, "toy"); delete(targetRegistry, "header") })

	help, _, err := cnibench(t, "toy", "--help")
	if err != nil || !strings.Contains(help, "  --toy-level int ") || !strings.Contains(help, "  --rounds N ") || !strings.Contains(help, "toy rounds") ||
		!strings.Contains(help, "  --auto-size ") || strings.Contains(help, "--churn-rate") || strings.Contains(help, "--streams") {
		t.Errorf("toy --help: %v\n%s", err, help)
	}
	if help, _, _ := cnibench(t, "run", "--help"); strings.Contains(help, "--toy-level") {
		t.Error("run --help shows the toy's flag")
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--toy-level", "2"}, "--toy-level applies to the toy schedule only (cnibench toy)"},
		{[]string{"toy", "--churn-rate", "2"}, "--churn-rate applies to the churn schedule only"},
		{[]string{"toy", "--streams", "2"}, "--streams does not apply to the toy schedule"},
		{[]string{"run", "--target", "k8s", "--dry-run", "--sync-verify", "api"}, "--sync-verify applies to the Service-scale sweep and the churn schedule and the toy schedule only"},
		{[]string{"toy", "--target", "header", "--toy-level", "0"}, "--toy-level must be at least 1, got 0"},
		{[]string{"toy", "--target", "header", "--placements", "pod-to-pod/same-node"}, "--placements: toy measures pod-to-service/other-node or pod-to-service/same-node"},
	} {
		_, _, err := cnibench(t, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: %v, want %q", c.args, err, c.want)
		}
	}
	for _, args := range [][]string{{"toy", "--target", "header", "--toy-level", "3"}, {"run", "--tests", "toy", "--target", "header", "--toy-level", "3"}} {
		_, stderr, err := cnibench(t, args...)
		if want := "toy at level 3 on a, a+toy, 7 Services, 5 rounds: about 1m24s\n"; err != nil || stderr != want {
			t.Errorf("%v: %v, header %q, want %q", args, err, stderr, want)
		}
	}
}
