package report

import (
	"io"
	"path/filepath"

	"github.com/cnibench/cnibench/results"
)

// SummaryFile is the Markdown summary written beside results.json. It is
// the same document as report.md, kept under its old name for readers and
// scripts that look for it.
const SummaryFile = "summary.md"

// WriteSummary writes dir/summary.md for run.
func WriteSummary(dir string, run *results.Run) error {
	return writeAtomic(filepath.Join(dir, SummaryFile), func(w io.Writer) error { return Summary(w, run) })
}

// Summary writes the Markdown report of one run.
func Summary(w io.Writer, run *results.Run) error {
	rep, err := Build([]Input{{Run: run}}, Options{})
	if err != nil {
		return err
	}
	return Markdown(w, rep)
}
