package cli

import (
	"errors"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/agent"
	"github.com/cnibench/cnibench/report"
	"github.com/cnibench/cnibench/results"
	"github.com/cnibench/cnibench/suite"
)

// failingClose is a target whose teardown fails.
type failingClose struct{}

func (failingClose) Kind() string                                { return "lab" }
func (failingClose) Details() map[string]any                     { return nil }
func (failingClose) Placement(string) (results.Placement, error) { return results.Placement{}, nil }
func (failingClose) Agent(string) (*agent.Client, error)         { return nil, errors.New("none") }
func (failingClose) CPUSeconds(string) (float64, error)          { return 0, errors.New("none") }
func (failingClose) Close() error                                { return errors.New("lab down: device busy") }

// A run whose teardown failed says so in results.json and its report,
// instead of a plain "complete".
func TestTeardownFailureRecorded(t *testing.T) {
	out := t.TempDir()
	run := &results.Run{SchemaVersion: results.SchemaVersion, RunID: "r", Status: results.StatusComplete,
		Scenarios: []results.Scenario{{Name: "a"}}}
	err, serr := closeScenarios([]suite.Scenario{{Name: "a", Target: failingClose{}}}, out, run, true)
	if err == nil || !strings.Contains(err.Error(), "device busy") || serr != nil {
		t.Fatalf("close error %v, save error %v", err, serr)
	}
	disk, lerr := results.Load(out)
	if lerr != nil || !strings.Contains(disk.Teardown, "scenario a: lab down: device busy") {
		t.Fatalf("results.json teardown %q (%v)", disk.Teardown, lerr)
	}
	rep, berr := report.Build([]report.Input{{Run: disk}}, report.Options{})
	if berr != nil {
		t.Fatal(berr)
	}
	if !strings.Contains(strings.Join(rep.Warnings, "\n"), "teardown failed (scenario a: lab down: device busy)") {
		t.Errorf("warnings %q", rep.Warnings)
	}
}
