package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/results"
)

// A results file written before runs recorded their parts and checks
// (recorded on the lab by the layout commit's binary: iptables,
// iptables+policy+flows+cc-reno, ebpf+l7-sidecar) still loads, its
// columns get their parts from the names, and its scenarios show the
// same check lines as the report of its day (testdata/oldparts/scenarios.md,
// cut from that report.md).
func TestOldResultsChecks(t *testing.T) {
	dir := filepath.Join("testdata", "oldparts")
	run, err := results.Load(filepath.Join(dir, results.FileName))
	if err != nil {
		t.Fatal(err)
	}
	for _, sc := range run.Scenarios {
		if sc.Parts != nil || sc.Checks != nil {
			t.Fatalf("the old file has parts or checks: %+v", sc)
		}
	}
	rep, err := Build([]Input{{Run: run}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if c := rep.Columns[1]; c.Adds != "policy+flows+cc-reno" || c.Against != 0 {
		t.Errorf("column %s adds %q against %d", c.Label, c.Adds, c.Against)
	}
	want, err := os.ReadFile(filepath.Join(dir, "scenarios.md"))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := Markdown(&b, rep); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	for _, line := range strings.Split(strings.TrimSpace(string(want)), "\n") {
		if !strings.Contains(md, line+"\n") {
			t.Errorf("report.md lacks the old line\n%s", line)
		}
	}
}
