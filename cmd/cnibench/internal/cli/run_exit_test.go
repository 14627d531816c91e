package cli

import (
	"errors"
	"testing"

	"github.com/cnibench/cnibench/results"
)

// A run that went to the end with failed samples exits ExitSamplesFailed
// with one line counting them and naming the first cause; a clean run
// exits 0.
func TestFailedSamplesExitStatus(t *testing.T) {
	run := &results.Run{Results: []results.Result{
		{Samples: []results.Sample{{}, {Error: "agent on node0-pod0 died: signal: killed"}}},
		{Samples: []results.Sample{{}, {Error: "agent on node1-pod0 died: signal: killed"}}},
	}}
	err := failedSamples(run, "out")
	var ce *codedError
	want := "2 of 4 samples failed (first: agent on node0-pod0 died: signal: killed); every sample and its cause is in out/results.json"
	if !errors.As(err, &ce) || ce.code != ExitSamplesFailed || ExitSamplesFailed != 5 || err.Error() != want {
		t.Fatalf("failedSamples = %v, want exit 5 and %q", err, want)
	}
	run.Results[0].Samples[1].Error, run.Results[1].Samples[1].Error = "", ""
	if err := failedSamples(run, "out"); err != nil {
		t.Fatalf("clean run: %v", err)
	}
}
