package cli

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/results"
)

// fixture is report's committed test run: two scenarios, three rounds.
func fixture(t *testing.T) *results.Run {
	t.Helper()
	run, err := results.Load(filepath.Join("..", "..", "..", "..", "report", "testdata", results.FileName))
	if err != nil {
		t.Fatal(err)
	}
	return run
}

func saveRun(t *testing.T, name string, run *results.Run) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := results.Save(dir, run); err != nil {
		t.Fatal(err)
	}
	return dir
}

// cnibench runs the command line in-process and returns stdout, stderr
// and the error Execute would turn into the exit status.
func cnibench(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	root := newRoot()
	var out, errw bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errw)
	root.SetArgs(args)
	err := root.ExecuteContext(context.Background())
	return out.String(), errw.String(), err
}

func exitCode(err error) int {
	var ee exitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return int(ee)
	}
	return 1
}

func TestCompareFailIfRegress(t *testing.T) {
	base := saveRun(t, "base", fixture(t))
	// The new run's native TCP_STREAM is the old vxlan one: 5% slower.
	worse := fixture(t)
	for i := range worse.Results {
		if worse.Results[i].Scenario == "native" && worse.Results[i].Test == "TCP_STREAM" {
			worse.Results[i].Samples = worse.Results[i+1].Samples
		}
	}
	cur := saveRun(t, "new", worse)

	stdout, stderr, err := cnibench(t, "compare", "--fail-if-regress", "3", base, cur)
	if code := exitCode(err); code != ExitRegression {
		t.Fatalf("exit %d (%v), want %d\nstdout: %s\nstderr: %s", code, err, ExitRegression, stdout, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if len(lines) != 1 || !strings.HasPrefix(lines[0], "REGRESSION native TCP_STREAM pod-to-pod/other-node throughput: 9.45 → 8.97 Gbit/s, 5.") {
		t.Errorf("stdout = %q", stdout)
	}
	if !strings.Contains(stderr, "1 of ") {
		t.Errorf("stderr = %q", stderr)
	}

	// A larger allowance, or the run against itself: exit 0.
	for _, args := range [][]string{{"compare", "--fail-if-regress", "10%", base, cur}, {"compare", "--fail-if-regress", "3", base, base}} {
		stdout, stderr, err := cnibench(t, args...)
		if exitCode(err) != 0 || stdout != "" || !strings.Contains(stderr, "no regression beyond") {
			t.Errorf("%v: exit %d (%v)\nstdout: %s\nstderr: %s", args, exitCode(err), err, stdout, stderr)
		}
	}
}

// A gate that cannot judge anything (one round) fails loudly instead of
// passing.
func TestCompareFailIfRegressNeedsRounds(t *testing.T) {
	one := fixture(t)
	for i := range one.Results {
		one.Results[i].Samples = one.Results[i].Samples[:min(1, len(one.Results[i].Samples))]
	}
	one.Plan.Rounds = 1
	dir := saveRun(t, "one", one)
	_, _, err := cnibench(t, "compare", "--fail-if-regress", "3", dir, dir)
	if exitCode(err) != 1 || !strings.Contains(err.Error(), "no metric could be judged") {
		t.Errorf("err = %v", err)
	}
}

func TestCompareWritesReports(t *testing.T) {
	a := saveRun(t, "before", fixture(t))
	b := saveRun(t, "after", fixture(t))
	out := filepath.Join(t.TempDir(), "cmp")
	_, stderr, err := cnibench(t, "compare", a, b, "--out", out, "--format", "all")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	md, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(md), "# cnibench comparison: before vs after") || !strings.Contains(string(md), "| after/vxlan |") {
		t.Errorf("report.md = %.400s", md)
	}
	for _, f := range []string{"report.html", "report.json"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
	// Without --out: one format to stdout.
	stdout, _, err := cnibench(t, "compare", a, b, "--format", "json")
	if err != nil || !strings.HasPrefix(stdout, "{") || !strings.Contains(stdout, `"at_a_glance"`) {
		t.Errorf("json to stdout: %v %.200s", err, stdout)
	}
	if _, _, err := cnibench(t, "compare", a, b, "--format", "md,html"); err == nil || !strings.Contains(err.Error(), "need --out") {
		t.Errorf("several formats to stdout: %v", err)
	}
	if _, _, err := cnibench(t, "compare", a, b, "--fail-if-regress", "x"); err == nil || !strings.Contains(err.Error(), "want a percentage") {
		t.Errorf("bad percentage: %v", err)
	}
	if _, _, err := cnibench(t, "compare", a, b, a, "--fail-if-regress", "5"); err == nil || !strings.Contains(err.Error(), "exactly two runs") {
		t.Errorf("three runs with --fail-if-regress: %v", err)
	}
}

func TestReportCommand(t *testing.T) {
	dir := saveRun(t, "run", fixture(t))
	stdout, stderr, err := cnibench(t, "report", dir, "--format", "all")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if !strings.Contains(stdout, "P99.9 µs") || !strings.Contains(stdout, "Verdicts (baseline native)") {
		t.Errorf("stdout = %s", stdout)
	}
	for _, f := range []string{"report.md", "report.html", "report.json", "summary.md"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
	if _, _, err := cnibench(t, "report", dir, "--format", "pdf"); err == nil || !strings.Contains(err.Error(), `unknown format "pdf"`) {
		t.Errorf("bad format: %v", err)
	}
}

// What only BASE has fails the gate, named on stdout, unless
// --allow-missing, which passes and keeps it as notes.
func TestCompareFailIfRegressMissing(t *testing.T) {
	base := saveRun(t, "base", fixture(t))
	less := fixture(t)
	less.Scenarios = less.Scenarios[:1] // native only
	var kept []results.Result
	for _, r := range less.Results {
		if r.Scenario == "native" && r.Test != "HTTP_QPS_1000" {
			kept = append(kept, r)
		}
	}
	less.Results = kept
	cur := saveRun(t, "new", less)
	stdout, stderr, err := cnibench(t, "compare", "--fail-if-regress", "5", base, cur)
	if code := exitCode(err); code != ExitRegression || !strings.Contains(stdout, "MISSING scenario vxlan is only in the base run\n") ||
		!strings.Contains(stdout, "MISSING native HTTP_QPS_1000 pod-to-pod/other-node is only in the base run\n") || !strings.Contains(stderr, "--allow-missing to pass anyway") {
		t.Errorf("exit %d (%v)\nstdout: %s\nstderr: %s", code, err, stdout, stderr)
	}
	stdout, stderr, err = cnibench(t, "compare", "--fail-if-regress", "5", "--allow-missing", base, cur)
	if code := exitCode(err); code != 0 || strings.Contains(stdout, "MISSING") || !strings.Contains(stderr, "note: scenario vxlan is only in the base run (allowed: --allow-missing)") {
		t.Errorf("--allow-missing: exit %d (%v)\nstdout: %s\nstderr: %s", code, err, stdout, stderr)
	}
	if _, _, err := cnibench(t, "compare", "--allow-missing", base, cur); err == nil || !strings.Contains(err.Error(), "--allow-missing applies to --fail-if-regress only") {
		t.Errorf("--allow-missing alone: %v", err)
	}
}
