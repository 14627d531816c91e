package report

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/cnibench/cnibench/results"
)

// Results and reports are shared together: every file of a run directory
// has the one mode results.FileMode (results.json was once 0600 while the
// reports were 0644).
func TestRunDirectoryFilesShareOneMode(t *testing.T) {
	if results.FileMode != 0o644 {
		t.Fatalf("results.FileMode = %o, want 0644 (readable by all)", results.FileMode)
	}
	dir := t.TempDir()
	run := fixtureRun(t)
	if err := results.Save(dir, run); err != nil {
		t.Fatal(err)
	}
	if err := WriteSummary(dir, run); err != nil {
		t.Fatal(err)
	}
	if _, err := Write(dir, buildFixture(t), []string{FormatMarkdown, FormatHTML, FormatJSON}); err != nil {
		t.Fatal(err)
	}
	names := []string{results.FileName, SummaryFile, MarkdownFile, HTMLFile, JSONFile}
	for _, name := range names {
		st, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != results.FileMode {
			t.Errorf("%s has mode %o, want %o like every file of the run", name, st.Mode().Perm(), results.FileMode)
		}
	}
}
