package cli

import (
	"fmt"
	"path/filepath"

	"github.com/cnibench/cnibench/results"
)

// ExitSamplesFailed is the exit status of a run or sweep that went to the
// end but with failed samples (each kept in results.json with its cause,
// e.g. an agent killed mid-sample): the reports are written, yet a script
// must not take the numbers for a whole run. (4 is a failed teardown,
// teardown.go.)
const ExitSamplesFailed = 5

// codedError is an error printed as usual but exiting with its own status.
type codedError struct {
	code int
	err  error
}

func (e *codedError) Error() string { return e.err.Error() }
func (e *codedError) Unwrap() error { return e.err }

// failedSamples is the error of a run whose samples did not all succeed,
// nil when they did.
func failedSamples(run *results.Run, out string) error {
	if run == nil {
		return nil
	}
	failed, total, first := 0, 0, ""
	for _, r := range run.Results {
		for _, s := range r.Samples {
			total++
			if s.Error != "" {
				if failed == 0 {
					first = s.Error
				}
				failed++
			}
		}
	}
	if failed == 0 {
		return nil
	}
	return &codedError{ExitSamplesFailed, fmt.Errorf("%d of %d samples failed (first: %s); every sample and its cause is in %s",
		failed, total, first, filepath.Join(out, results.FileName))}
}
