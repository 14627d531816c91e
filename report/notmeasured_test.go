package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/results"
)

// A run of twins on a cluster answers its measured questions and says
// each question it could not measure with the reason, outside the
// questions' family (which counts only the measured ones); the design,
// each part's switches and proof, and the parts not measured are in
// report.md and report.html.
func TestNotMeasuredQuestions(t *testing.T) {
	run := &results.Run{SchemaVersion: results.SchemaVersion, RunID: "tw", Status: results.StatusComplete,
		Plan: results.Plan{Profile: "security", Tests: []string{"HTTP_RPS_SHORT_C64"}, Placements: []string{"pod-to-service/other-node"}, Rounds: 5,
			Questions: []results.Question{
				{Ask: "c: policy cost", Test: "HTTP_RPS_SHORT_C64", Placement: "pod-to-service/other-node", Metric: "request rate", A: "c", B: "c+policy"},
				{Ask: "c: l7-node cost", Test: "HTTP_RPS_SHORT_C64", Placement: "pod-to-service/other-node", Metric: "request rate", A: "c", B: "c+l7-node",
					NotMeasured: "Cilium runs with enable-l7-proxy=false: no L7 proxy"},
			}},
		Twins: &results.Twins{Design: "twins on one target, ABBA by round",
			Parts: []results.TwinPart{{Part: "policy", Scenario: "c+policy", How: "a NetworkPolicy applied", Switches: []results.TwinSwitch{
				{Round: 0, On: false, Proof: "checked"}, {Round: 1, On: true, Proof: "enforced after 0.4 s"}, {Round: 1, On: false, Proof: "removed"}}}},
			NotMeasured: []results.NotMeasured{{Part: "l7-node", Reason: "Cilium runs with enable-l7-proxy=false: no L7 proxy"}}},
	}
	for _, sc := range []string{"c", "c+policy"} {
		run.Scenarios = append(run.Scenarios, results.Scenario{Name: sc, Target: results.Target{Kind: "k8s"}})
		rps := []float64{1000, 1010, 990, 1005, 995}
		if sc == "c+policy" {
			rps = []float64{900, 905, 895, 910, 890}
		}
		run.Results = append(run.Results, results.Result{Scenario: sc, Test: "HTTP_RPS_SHORT_C64",
			Placement: results.Placement{Path: "pod-to-service", Node: "other-node"}, Samples: httpSamples(t, rps, []float64{300, 301, 299, 300, 302}, 0, 0, 0)})
	}
	run.Target = run.Scenarios[0].Target
	rep, err := Build([]Input{{Run: run}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Answers) != 2 || !rep.Answers[0].Primary || rep.Answers[1].Primary || rep.Answers[1].Verdict != VerdictNotMeasured ||
		!strings.Contains(rep.Answers[1].Text, "c+l7-node vs c: not measured: Cilium runs with enable-l7-proxy=false: no L7 proxy") {
		t.Fatalf("answers: %+v", rep.Answers)
	}
	if rep.QuestionsFDR == nil || rep.QuestionsFDR.Comparisons != 1 {
		t.Errorf("questions family: %+v, want the one measured question", rep.QuestionsFDR)
	}
	if rows := answerRows(rep); rows[1].Verdict != "Cilium runs with enable-l7-proxy=false: no L7 proxy (left out of the questions' family)" || rows[1].Words != "not measured" {
		t.Errorf("answer row: %+v", rows[1])
	}
	dir := t.TempDir()
	if _, err := Write(dir, rep, []string{"md", "html"}); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"report.md", "report.html"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"Twins on one target", "twins on one target, ABBA by round", "switched 2 times during the rounds, every switch proved; on: enforced after 0.4 s",
			"l7-node: not measured: Cilium runs with enable-l7-proxy=false", "1 question not measured"} {
			if !strings.Contains(string(b), want) {
				t.Errorf("%s lacks %q", f, want)
			}
		}
	}
}
