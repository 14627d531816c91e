package report

import (
	"fmt"
	"math"
	"strconv"

	"github.com/cnibench/cnibench/results"
	"github.com/cnibench/cnibench/stats"
)

// Input is one results document and the label its columns carry.
type Input struct {
	Run *results.Run
	// Label names the run in column headers when several runs are
	// compared (a run id or directory name); unused for a single run.
	Label string
}

// Options tunes the verdicts; zero values mean stats.Compare's defaults
// (95% level, 1% minimum effect, 3 samples a side).
type Options struct {
	Level        float64 `json:"level"`
	MinEffectPct float64 `json:"min_effect_pct"`
	MinSamples   int     `json:"min_samples"`
	// AllMetrics makes the regression gate judge every metric, not only
	// the headline ones (rates, throughput, p99).
	AllMetrics bool `json:"all_metrics,omitempty"`
	// Sequential: Level is the per-look level of a run whose rounds
	// stopped when its questions were clear (--rounds auto); p-values are
	// then scaled to 5% (tested).
	sequential bool
}

func (o Options) withDefaults() Options {
	if o.Level <= 0 || o.Level >= 1 {
		o.Level = stats.DefaultLevel
	}
	if o.MinEffectPct == 0 {
		o.MinEffectPct = stats.DefaultMinEffectPct
	}
	if o.MinSamples == 0 {
		o.MinSamples = stats.DefaultMinRounds
	}
	o.MinSamples = max(o.MinSamples, 2)
	return o
}

// Report is everything a rendering shows, computed from results alone. It
// is also the --format json document.
type Report struct {
	Title   string    `json:"title"`
	Runs    []RunInfo `json:"runs"`
	Columns []Column  `json:"columns"`
	// Baseline is the first column: every other column gets a verdict
	// against it (VsBaseline).
	Baseline string  `json:"baseline"`
	Options  Options `json:"options"`
	// WinnerRule says how the Winner of a row is chosen.
	WinnerRule string      `json:"winner_rule"`
	Glance     []GlanceRow `json:"at_a_glance"`
	Sections   []Section   `json:"tests"`
	Warnings   []string    `json:"warnings,omitempty"`
	// ServiceScale analyses a Service-scale sweep (one run only).
	ServiceScale *ServiceScale `json:"service_scale,omitempty"`
	// PolicyScale analyses policy-N scenarios of one run (policyscale.go).
	PolicyScale *PolicyScale `json:"policy_scale,omitempty"`
	// Churn analyses a churn run (churn.go).
	Churn *Churn `json:"churn,omitempty"`
	// FlameGraphs are the runs' profiled samples (flamegraph.go).
	FlameGraphs []FlameGraph `json:"flame_graphs,omitempty"`
	// Extra holds, by key, the models of sections that have no field
	// here (section.go): a section added as one file keeps its own.
	Extra map[string]any `json:"extra_sections,omitempty"`
	// FDR is how the report's verdicts are held together to a
	// false-discovery rate (fdr.go).
	FDR *FDR `json:"fdr,omitempty"`
	// QuestionsFDR is the control of the questions' own family, when the
	// run's profile asked questions (questions.go); FDR is then the
	// exploratory rest.
	QuestionsFDR *FDR `json:"questions_fdr,omitempty"`
	// Answers is one line per question the report answers: the profile's
	// questions (questions.go) or, without questions, who is ahead on
	// each headline metric of each contest, by how much, how sure
	// (answers.go).
	Answers []Answer `json:"answers"`
}

// WinnerRule is the documented way a row's winner is picked.
const WinnerRule = "The column with the best median is compared with the runner-up: columns of one interleaved run round by round " +
	"(on the rounds every column completed; the geometric mean of the per-round ratios with its t-interval, in which what the machine did " +
	"during a round cancels), columns of separate runs and the steps of a sweep by ranks (Mann-Whitney with the Hodges-Lehmann shift, exact " +
	"coverage, printed where it is not 95%). The side that comparison's own estimate favours is the one named. It is the winner only if the " +
	"interval lies beyond the 1% minimum effect and the verdict survives the report's false-discovery control; a verdict needs 5 rounds, and " +
	"an interval that includes no change but reaches beyond ±10% is inconclusive. Every other column is also compared with the baseline " +
	"(first column), or with the scenario it adds parts to."

// Num is a float64 that JSON-encodes with 6 significant digits (stable
// across platforms for golden files; the samples keep full precision in
// results.json) and as null when not finite.
type Num float64

func (n Num) MarshalJSON() ([]byte, error) {
	f := float64(n)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return []byte("null"), nil
	}
	v, _ := strconv.ParseFloat(strconv.FormatFloat(f, 'g', 6, 64), 64)
	return strconv.AppendFloat(nil, v, 'f', -1, 64), nil
}

// Build computes a report from one or more runs. With one run the columns
// are its scenarios; with several, every run's scenarios, labelled by run.
func Build(in []Input, opt Options) (*Report, error) {
	if len(in) == 0 {
		return nil, fmt.Errorf("report: no results to report")
	}
	if len(in) == 1 && in[0].Run.Plan.Auto != nil && opt.Level == 0 {
		// The rounds stopped when the questions looked clear: every verdict
		// is judged at the level each look was (stats.SequentialLevel).
		opt.Level, opt.sequential = in[0].Run.Plan.Auto.Level, true
	}
	opt = opt.withDefaults()
	rep := &Report{Options: opt, WinnerRule: WinnerRule}
	colResults, order := buildColumns(rep, in)
	if len(rep.Columns) == 0 {
		return nil, fmt.Errorf("report: the results hold no scenario")
	}
	rep.Baseline = rep.Columns[0].Label
	if setAgainst(rep.Columns); anyAgainst(rep.Columns) {
		rep.Baseline += " (a scenario that adds parts to another, as iptables+policy to iptables, is compared with that one)"
	}
	rep.Warnings = runWarnings(rep, opt)

	for _, k := range order {
		sec, err := buildSection(rep, k, colResults, opt)
		if err != nil {
			return nil, err
		}
		rep.Warnings = append(rep.Warnings, suspectSamples(sec, rep.Columns)...)
		sec.CPU = cpuLines(sec, rep.Columns)
		if len(in) == 1 {
			markControl(&sec, in[0].Run)
		}
		for _, row := range sec.Metrics {
			if row.Headline {
				rep.Glance = append(rep.Glance, GlanceRow{Test: sec.Test, Placement: sec.Placement, Row: row})
			}
		}
		rep.Sections = append(rep.Sections, sec)
	}
	if err := buildSections(rep, in, beforeControl); err != nil {
		return nil, err
	}
	var qs []question
	if len(in) == 1 {
		qs = locateQuestions(rep, in[0].Run)
	}
	rep.Title = title(rep, len(qs) > 0)
	controlFDR(rep, questionKeys(qs))
	if rep.ServiceScale != nil {
		// Its findings quote the step verdicts the control may just have
		// demoted: one verdict per cell in the table and in the words.
		rep.ServiceScale.Findings = findings(rep.ServiceScale)
	}
	overheadVerdicts(rep)
	finishReproduced(rep) // its shapes quote verdicts the control may just have demoted
	if err := buildSections(rep, in, afterControl); err != nil {
		return nil, err
	}
	rep.Warnings = append(rep.Warnings, hostWarnings(rep, in)...)
	if w := inconclusiveWarning(rep); w != "" {
		rep.Warnings = append(rep.Warnings, w)
	}
	switch {
	case len(qs) > 0:
		rep.Answers = append(questionAnswers(rep, qs, in[0].Run.Plan.Auto), notMeasuredAnswers(in[0].Run)...)
		orientWinners(rep, qs)
	case anyAgainst(rep.Columns):
		rep.Answers = overheadAnswers(rep)
	default:
		rep.Answers = answers(rep)
	}
	return rep, nil
}
