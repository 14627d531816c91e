package suite

import (
	"context"
	"errors"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/cnibench/cnibench/results"
)

// When results.json can no longer be written (here the third sample's
// save fails with ENOSPC), the run stops at once with one error naming the
// file and what it still holds, and the file keeps every sample saved
// before. The real disk-full and read-only cases: e2e/faults_test.go.
func TestRunnerStopsWhenResultsCannotBeSaved(t *testing.T) {
	c := startAgent(t)
	var calls []string
	plan := rrPlan(t, 6, 100*time.Millisecond)
	out := t.TempDir()
	saves := 0
	r := &Runner{Scenarios: []Scenario{{Name: "a", Target: loopTarget{c, &calls, "a"}}}, Plan: plan, OutDir: out, RunID: "full",
		store: func(dir string, run *results.Run) error {
			saves++
			if saves > 3 { // the empty document, then two samples
				return &results.SaveError{Path: filepath.Join(dir, results.FileName), Err: syscall.ENOSPC}
			}
			return results.Save(dir, run)
		}}
	_, err := r.Run(context.Background())
	want := "write " + filepath.Join(out, results.FileName) + ": no space left on device; the run stopped: it keeps the 2 samples saved before"
	var se *results.SaveError
	if err == nil || err.Error() != want || !errors.As(err, &se) {
		t.Fatalf("err = %v, want %q", err, want)
	}
	if len(calls) != 3 {
		t.Errorf("%d samples taken, want 3: the run must stop at the first failed save", len(calls))
	}
	disk, err := results.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(disk.Results[0].Samples); n != 2 {
		t.Fatalf("results.json holds %d samples, want the 2 saved", n)
	}
	for _, s := range disk.Results[0].Samples {
		if s.Error != "" || s.Result == nil {
			t.Errorf("saved sample damaged: %+v", s)
		}
	}
}
