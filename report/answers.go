package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/cnibench/cnibench/results"
)

// What a placement crosses: a comparison of scenarios that differ only in
// their routing (native vs VXLAN) says nothing about it on a placement
// whose traffic never leaves a node or never enters a pod network, so
// such a placement is a control (it should come out even; if not, the
// machine drifted), not a contest. crosses knows, per varied target
// detail, which placements cross it. The Service datapath is not in it:
// a netfilter datapath's hooks and conntrack see every connection, pod to
// pod included (measured: 25% fewer short HTTP connections per second
// between pods in an iptables lab than in an eBPF one), so no placement
// is a control of a Service-datapath comparison.
var crosses = map[string]func(path, node string) bool{
	"routing": func(path, node string) bool { return node == "other-node" && path != "host-to-host" },
}

// controlWhy says why a placement is a control of the run's comparison,
// or "" when it is a contest (or what varies is not known to us).
func controlWhy(run *results.Run, placement string) string {
	varied := variedDetails(run)
	if len(varied) == 0 {
		return ""
	}
	path, node, _ := strings.Cut(placement, "/")
	for _, k := range varied {
		f, known := crosses[k]
		if !known || f(path, node) {
			return ""
		}
	}
	return fmt.Sprintf("control: %s does not cross what the scenarios vary (%s), so it should come out even", placement, strings.Join(varied, ", "))
}

// variedDetails lists the target details whose values differ between the
// run's scenarios, among those crosses knows, plus any other difference
// as "other" (then nothing is a control).
func variedDetails(run *results.Run) []string {
	if len(run.Scenarios) < 2 {
		return nil
	}
	var out []string
	for _, k := range []string{"service_datapath", "routing"} {
		// Both are read, so a run that varies the Service datapath (not
		// in crosses) has no controls at all.
		first := fmt.Sprint(run.Scenarios[0].Target.Details[k])
		for _, sc := range run.Scenarios[1:] {
			if fmt.Sprint(sc.Target.Details[k]) != first {
				out = append(out, k)
				break
			}
		}
	}
	return out
}

// answers are the report's one line per question: for each headline
// metric of each contest (a section that is no control), who is ahead,
// by how much and how sure, as the Winner says it.
func answers(rep *Report) []Answer {
	if len(rep.Columns) < 2 {
		how := "run two side by side, e.g. --scenarios iptables,ebpf, or --profile datapaths"
		if onCluster(rep) {
			how = "a cluster is one scenario: compare two runs with `cnibench compare DIR1 DIR2`, or --profile security's twins"
		}
		return []Answer{{Verdict: VerdictNA, Text: "one scenario: nothing was compared (" + how + ")"}}
	}
	var out []Answer
	for _, sec := range rep.Sections {
		if sec.Control != "" {
			continue
		}
		for _, row := range sec.Metrics {
			w := row.Winner
			if !row.Headline || w == nil || w.Verdict == VerdictNA {
				continue
			}
			a := Answer{Test: sec.Test, Placement: sec.Placement, Metric: row.Metric, Verdict: w.Verdict}
			head := fmt.Sprintf("%s %s, %s: ", sec.Placement, sec.Test, row.Metric)
			if w.pair[0] == w.pair[1] {
				a.Text = head + w.Text // a winner without its columns (hand-built)
				out = append(out, a)
				continue
			}
			runnerUp, best := w.pair[0], w.pair[1]
			a.A, a.B = rep.Columns[runnerUp].Label, rep.Columns[best].Label
			d := &Delta{Verdict: w.Verdict, DeltaPct: w.DeltaPct, Lo: w.Lo, Hi: w.Hi, Coverage: w.Coverage, P: w.P, Text: w.Text}
			fillAnswer(&a, rep, row, runnerUp, best, d, false)
			a.Words = answerWords(a, row, d)
			a.Text = head + a.B + " vs " + a.A + ": " + answerBody(a, d)
			out = append(out, a)
		}
	}
	return out
}

// markControl marks a section whose placement does not cross what the
// run's scenarios vary: no winner there, and a warning if its columns
// differ significantly anyway.
func markControl(sec *Section, run *results.Run) {
	if sec.Control = controlWhy(run, sec.Placement); sec.Control == "" {
		return
	}
	for _, row := range sec.Metrics {
		w := row.Winner
		if w == nil {
			continue
		}
		if w.Verdict == VerdictSignificant {
			sec.Warnings = append(sec.Warnings, fmt.Sprintf("%s differs significantly on a control placement (%s): the machine drifted, or the scenarios differ in more than what they vary", row.Metric, w.Text))
		}
		w.Label = ""
		w.Text = "control: " + w.Text
	}
}

// WriteAnswers writes a report's answers for the terminal, once: the
// lines, how their verdicts were held together, and how many warnings
// the report has.
func WriteAnswers(w io.Writer, rep *Report) {
	writeShapes(w, rep)
	fmt.Fprintln(w, "\nAnswers:")
	for _, a := range rep.Answers {
		fmt.Fprintf(w, "  - %s\n", a.Text)
	}
	for _, l := range correctionLines(rep) {
		fmt.Fprintf(w, "  %s\n", l)
	}
	if l := warningsLine(len(rep.Warnings)); l != "" {
		fmt.Fprintf(w, "  %s\n", strings.Replace(l, "under Warnings below", "in report.md (Warnings)", 1))
	}
}

// onCluster is whether the report's runs measured a cluster (--target k8s).
func onCluster(rep *Report) bool {
	for _, r := range rep.Runs {
		for _, sc := range r.Scenarios {
			if sc.Kind == "k8s" {
				return true
			}
		}
	}
	return false
}
