package report

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/engine"
	"github.com/cnibench/cnibench/results"
)

func buildFixture(t *testing.T) *Report {
	t.Helper()
	rep, err := Build([]Input{{Run: loadFixture(t)}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// golden compares got with testdata/name, rewriting it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join(fixtureDir, name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./report -run Golden -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		gl, wl := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
		for i := range min(len(gl), len(wl)) {
			if gl[i] != wl[i] {
				t.Fatalf("%s differs at line %d:\n got: %s\nwant: %s\n(go test ./report -run Golden -update rewrites it after a deliberate change)", name, i+1, gl[i], wl[i])
			}
		}
		t.Fatalf("%s differs in length: %d lines, want %d", name, len(gl), len(wl))
	}
}

func TestGoldenMarkdown(t *testing.T) {
	var b bytes.Buffer
	if err := Markdown(&b, buildFixture(t)); err != nil {
		t.Fatal(err)
	}
	golden(t, "report.golden.md", b.Bytes())
}

func TestGoldenJSON(t *testing.T) {
	var b bytes.Buffer
	if err := JSON(&b, buildFixture(t)); err != nil {
		t.Fatal(err)
	}
	golden(t, "report.golden.json", b.Bytes())
	var back Report
	if err := json.Unmarshal(b.Bytes(), &back); err != nil {
		t.Fatalf("report.json does not read back: %v", err)
	}
}

// glance finds an at-a-glance row.
func glance(t *testing.T, rep *Report, test, metric string) GlanceRow {
	t.Helper()
	for _, g := range rep.Glance {
		if g.Test == test && g.Metric == metric {
			return g
		}
	}
	t.Fatalf("no at-a-glance row %s %s", test, metric)
	return GlanceRow{}
}

// The fixture's known differences come out of the report path as
// designed: a clear 5% is significant, identical inputs are within noise,
// a column with two good rounds gets no verdict, loss is judged on the
// delivered share.
func TestFixtureVerdicts(t *testing.T) {
	rep := buildFixture(t)
	if len(rep.Columns) != 2 || rep.Baseline != "native" || rep.Columns[1].Label != "vxlan" {
		t.Fatalf("columns = %+v", rep.Columns)
	}
	tp := glance(t, rep, "TCP_STREAM", "throughput")
	if w := tp.Winner; w.Verdict != VerdictSignificant || w.Label != "native" || !strings.HasPrefix(w.Text, "native: 5.") ||
		!strings.Contains(w.Text, "higher throughput than vxlan (significant") {
		t.Errorf("TCP_STREAM winner = %+v", w)
	}
	if d := tp.VsBaseline[1]; d == nil || !d.Worse || d.Better || float64(d.DeltaPct) > -4.5 || float64(d.DeltaPct) < -5.5 {
		t.Errorf("TCP_STREAM vxlan vs native = %+v", d)
	}
	rr := glance(t, rep, "TCP_RR", "rate")
	if w := rr.Winner; w.Verdict != VerdictNoise || w.Label != "" || !strings.HasPrefix(w.Text, "control: native vs vxlan: no meaningful difference (+0.0%, 95% CI +0.0%..+0.0%: within the 1% minimum effect)") {
		t.Errorf("TCP_RR identical: winner = %+v", w)
	}
	crr := glance(t, rep, "TCP_CRR", "rate")
	if w := crr.Winner; w.Verdict != VerdictTooFew || w.Text != "not enough rounds for a verdict (n=4)" {
		t.Errorf("TCP_CRR with a failed round: winner = %+v", w)
	}
	var udp Section
	for _, s := range rep.Sections {
		if s.Test == "UDP_STREAM" {
			udp = s
		}
	}
	for _, r := range udp.Metrics {
		if r.Metric == "loss" {
			// −1.5% (CI −1.9..−1.1%) is beyond the 1% minimum effect alone
			// (p 0.02), not among the report's 31 comparisons.
			if d := r.VsBaseline[1]; d.Better || float64(d.DeltaPct) > -1 || !strings.Contains(d.Text, "lower delivered share") {
				t.Errorf("UDP loss vs baseline = %+v", d)
			}
		}
	}
	if sk := rep.Sections[1]; sk.Placement != "host-to-host/other-node" || sk.Samples[0].Skipped == "" || len(sk.Metrics) != 0 ||
		strings.Contains(strings.Join(sk.Warnings, "\n"), "no successful sample") || sk.Samples[0].NotTaken != 0 {
		t.Errorf("skipped section = %+v", sk)
	}
	if got := rep.Sections[4].Samples[1]; rep.Sections[4].Test != "TCP_CRR" || got.Failed != 1 || got.OK != 4 || !strings.Contains(got.FirstError, "connection reset") {
		t.Errorf("TCP_CRR vxlan samples = %+v", got)
	}
	http := glance(t, rep, "HTTP_RPS_C64", "request rate")
	if http.Winner.Label != "native" {
		t.Errorf("HTTP winner = %+v", http.Winner)
	}
	// Open loop: requests/s is not a headline, p99 is.
	for _, g := range rep.Glance {
		if g.Test == "HTTP_QPS_1000" && g.Metric == "request rate" {
			t.Errorf("HTTP_QPS_1000 request rate must not be at a glance")
		}
	}
	glance(t, rep, "HTTP_QPS_1000", "p99 latency")
}

// makeRun builds a two-scenario run of n rounds whose TCP_STREAM
// throughputs are drawn around the given means with 1.5% noise.
func makeRun(seed uint64, n int, meanA, meanB float64) *results.Run {
	r := rand.New(rand.NewPCG(seed, 7))
	draw := func(mean float64) []float64 {
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = mean * (1 + 0.015*r.NormFloat64())
		}
		return xs
	}
	pl := results.Placement{Path: "pod-to-pod", Node: "other-node"}
	return &results.Run{SchemaVersion: results.SchemaVersion, RunID: "synthetic", Status: results.StatusComplete,
		Scenarios: []results.Scenario{{Name: "a"}, {Name: "b"}},
		Plan:      results.Plan{Rounds: n, Mode: engine.Blocking},
		Results: []results.Result{
			{Scenario: "a", Test: "TCP_STREAM", Placement: pl, Samples: streamSamples(draw(meanA), nil)},
			{Scenario: "b", Test: "TCP_STREAM", Placement: pl, Samples: streamSamples(draw(meanB), nil)},
		}}
}

func TestReportPathSignificance(t *testing.T) {
	for _, c := range []struct {
		name         string
		meanA, meanB float64
		verdict      string
		label        string
	}{
		{"clear 5% difference", 10, 10.5, VerdictSignificant, "b"},
		{"identical distributions", 10, 10, VerdictNoise, ""},
	} {
		rep, err := Build([]Input{{Run: makeRun(42, 8, c.meanA, c.meanB)}}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		g := glance(t, rep, "TCP_STREAM", "throughput")
		t.Logf("%s: %s", c.name, g.Winner.Text)
		if g.Winner.Verdict != c.verdict || g.Winner.Label != c.label {
			t.Errorf("%s: winner = %+v, want %s %q", c.name, g.Winner, c.verdict, c.label)
		}
		var md bytes.Buffer
		if err := Markdown(&md, rep); err != nil {
			t.Fatal(err)
		}
		want := "| b vs a: no difference beyond noise ("
		if c.verdict == VerdictSignificant {
			want = "| b: "
		}
		if !strings.Contains(md.String(), want) {
			t.Errorf("%s: report.md lacks %q", c.name, want)
		}
	}
	// Identical inputs exactly: zero difference, never significant.
	run := makeRun(1, 5, 10, 10)
	run.Results[1].Samples = run.Results[0].Samples
	rep, err := Build([]Input{{Run: run}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if w := glance(t, rep, "TCP_STREAM", "throughput").Winner; w.Verdict != VerdictNoise || float64(w.DeltaPct) != 0 {
		t.Errorf("identical inputs: %+v", w)
	}
}

// One round is never judged, and the report says why instead of a verdict.
func TestOneRoundNoVerdict(t *testing.T) {
	rep, err := Build([]Input{{Run: makeRun(3, 1, 10, 20)}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	w := glance(t, rep, "TCP_STREAM", "throughput").Winner
	if w.Verdict != VerdictTooFew || w.Text != "not enough rounds for a verdict (n=1)" || w.Label != "" {
		t.Errorf("n=1 winner = %+v", w)
	}
	if !strings.Contains(strings.Join(rep.Warnings, "\n"), "a verdict needs at least 5 per column") {
		t.Errorf("warnings = %q", rep.Warnings)
	}
}

// Comparing separate runs: columns per run, cells one run lacks shown as
// missing, and runs with different plans flagged.
func TestCompareRuns(t *testing.T) {
	a, b := fixtureRun(t), fixtureRun(t)
	b.RunID = "20261202-120000-0002"
	b.Plan.Duration = engine.Duration(30e9)
	b.Results = b.Results[:4] // only the stream tests
	rep, err := Build([]Input{{Run: a, Label: "before"}, {Run: b, Label: "after"}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var labels []string
	for _, c := range rep.Columns {
		labels = append(labels, c.Label)
	}
	if strings.Join(labels, ",") != "before/native,before/vxlan,after/native,after/vxlan" {
		t.Errorf("columns = %v", labels)
	}
	rr := glance(t, rep, "TCP_RR", "rate")
	if rr.Values[2] != nil || rr.Values[0] == nil {
		t.Errorf("TCP_RR should be missing in the second run only: %+v", rr.Values)
	}
	if !strings.Contains(strings.Join(rep.Warnings, "\n"), "plans differ between before and after (duration 10s vs 30s)") {
		t.Errorf("warnings = %q", rep.Warnings)
	}
	var md bytes.Buffer
	if err := Markdown(&md, rep); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "| missing |") || !strings.Contains(md.String(), "# cnibench comparison: before vs after") {
		t.Errorf("comparison report:\n%s", md.String())
	}
}

func TestRegressions(t *testing.T) {
	base := fixtureRun(t)
	// Same run against itself: nothing regressed, yet metrics were judged.
	chk, err := Regressions(base, base, 3, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(chk.Regressions) != 0 || chk.Judged == 0 {
		t.Errorf("self comparison: %+v", chk)
	}
	// vxlan's numbers as the new native: throughput −5% is past 3%.
	cur := fixtureRun(t)
	for i := range cur.Results {
		if cur.Results[i].Scenario == "native" && cur.Results[i].Test == "TCP_STREAM" {
			cur.Results[i].Samples = cur.Results[i+1].Samples
		}
	}
	chk, err = Regressions(base, cur, 3, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(chk.Regressions) != 1 || chk.Regressions[0].Metric != "throughput" || chk.Regressions[0].Scenario != "native" {
		t.Fatalf("regressions = %+v", chk.Regressions)
	}
	line := chk.Regressions[0].String()
	if !strings.HasPrefix(line, "native TCP_STREAM pod-to-pod/other-node throughput: 9.45 → 8.97 Gbit/s, 5.") || !strings.Contains(line, "lower throughput (significant") {
		t.Errorf("line = %q", line)
	}
	// A 10% allowance lets the 5% drop pass; so does 5%: the estimate
	// (−5.1%) is past it, but the interval's near bound (−4.3%) is not.
	for _, pct := range []float64{10, 5} {
		if chk, _ := Regressions(base, cur, pct, Options{}); len(chk.Regressions) != 0 {
			t.Errorf("%g%% allowance: %+v", pct, chk.Regressions)
		}
	}
}

func TestTableAndSummary(t *testing.T) {
	run := loadFixture(t)
	var b bytes.Buffer
	if err := Table(&b, run); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"P99.9 µs", "native: pod-to-pod/other-node", "9.45", "8.97",
		"4 (1 failed)", // vxlan TCP_CRR
		"client saturated (1 of 5)",
		"Verdicts (baseline native):",
		"not enough rounds for a verdict (n=4)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q\n%s", want, out)
		}
	}
	var s bytes.Buffer
	if err := Summary(&s, run); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(s.String(), "# cnibench standard: native vs vxlan\n") || !strings.Contains(s.String(), "20261201-120000-f1x7") {
		t.Errorf("summary = %.200s", s.String())
	}
}

func TestWriteFormats(t *testing.T) {
	if _, err := ParseFormats("md,pdf"); err == nil || !strings.Contains(err.Error(), `unknown format "pdf"`) {
		t.Errorf("bad format: %v", err)
	}
	f, err := ParseFormats("all,md")
	if err != nil || strings.Join(f, ",") != "md,html,json,short,csv" {
		t.Errorf("all = %v, %v", f, err)
	}
	dir := t.TempDir()
	paths, err := Write(dir, buildFixture(t), f)
	if err != nil || len(paths) != 5 {
		t.Fatalf("write: %v %v", paths, err)
	}
	for _, name := range []string{MarkdownFile, HTMLFile, JSONFile, ShortFile, CSVFile} {
		if st, err := os.Stat(filepath.Join(dir, name)); err != nil || st.Size() < 1000 {
			t.Errorf("%s: %v", name, err)
		}
	}
	left, _ := filepath.Glob(filepath.Join(dir, ".*"))
	if len(left) > 0 {
		t.Errorf("temp files left: %v", left)
	}
}

// The short report fits a pull-request comment whatever the run, keeps
// the answers first, and says what it cut; the CSV has one row per cell
// with the verdict the tables show.
func TestShortAndCSV(t *testing.T) {
	rep := buildFixture(t)
	var b strings.Builder
	if err := Short(&b, rep); err != nil {
		t.Fatal(err)
	}
	short := b.String()
	if !strings.HasPrefix(short, "### cnibench standard: native vs vxlan\n\n| Question |") || !strings.Contains(short, "2 warnings</summary>") || len(short) > ShortLimit {
		t.Errorf("short report (%d chars):\n%s", len(short), short)
	}
	for i := range 400 {
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("warning %d: %s", i, strings.Repeat("x", 80)))
	}
	b.Reset()
	if err := Short(&b, rep); err != nil || b.Len() > ShortLimit || !strings.Contains(b.String(), "more in report.md") {
		t.Errorf("a long short report: %d chars, %v", b.Len(), err)
	}
	b.Reset()
	if err := CSV(&b, buildFixture(t)); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(strings.NewReader(b.String())).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	var tp []string
	for _, r := range recs {
		if r[1] == "vxlan" && r[2] == "TCP_STREAM" && r[4] == "throughput" {
			tp = r
		}
	}
	if len(recs) < 50 || strings.Join(recs[0], ",") != strings.Join(csvHead, ",") || tp == nil || tp[14] != "native" || tp[19] != VerdictSignificant ||
		!strings.HasPrefix(tp[15], "-5.") {
		t.Errorf("csv: %d rows, head %v, vxlan TCP_STREAM throughput %v", len(recs), recs[0], tp)
	}
}

// A sweep's steps pair by Service count: a 30% drop at step 0 is caught
// (keyed without the count, every new step met the base's last step, and
// this drop passed as "0 regressions").
func TestRegressionsPairSweepSteps(t *testing.T) {
	base := scaleFixtureRun(t)
	chk, err := Regressions(base, base, 5, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(chk.Regressions) != 0 || len(chk.Unpaired) != 0 || chk.Judged == 0 {
		t.Fatalf("sweep against itself: %+v", chk)
	}
	cur := scaleFixtureRun(t)
	for i, r := range cur.Results {
		if r.Scenario == "iptables" && r.Test == "HTTP_RPS_SHORT_C64" && r.Services == 0 {
			cur.Results[i].Samples = httpSamples(t, spread(7000), spread(64e6/7000), 0, 0, 0)
		}
	}
	chk, err = Regressions(base, cur, 5, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(chk.Regressions) == 0 {
		t.Fatalf("a 30%% drop at step 0 passed: %+v", chk)
	}
	for _, r := range chk.Regressions {
		if r.Scenario != "iptables" || r.Test != "HTTP_RPS_SHORT_C64" || r.Services != 0 {
			t.Errorf("unexpected regression %s", r)
		}
	}
	if line := chk.Regressions[0].String(); !strings.HasPrefix(line, "iptables HTTP_RPS_SHORT_C64 pod-to-service/other-node ") {
		t.Errorf("line = %q", line)
	}
	// A step only the new run has is named with its count.
	cur.Results = append(cur.Results, cur.Results[len(cur.Results)-1])
	cur.Results[len(cur.Results)-1].Services = 99999
	chk, _ = Regressions(base, cur, 5, Options{})
	if !strings.Contains(strings.Join(chk.Unpaired, "\n"), "at 99999 Services is only in the new run") {
		t.Errorf("unpaired = %q", chk.Unpaired)
	}
}
