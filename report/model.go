package report

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/cnibench/cnibench/engine/engineapi"
	"github.com/cnibench/cnibench/engine/kinds"
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

// RunInfo is one run's provenance.
type RunInfo struct {
	Label       string              `json:"label"`
	RunID       string              `json:"run_id"`
	Status      string              `json:"status"`
	Error       string              `json:"error,omitempty"`
	Teardown    string              `json:"teardown,omitempty"` // what failed closing the targets
	Start       time.Time           `json:"start"`
	End         time.Time           `json:"end"`
	Tool        results.Tool        `json:"tool"`
	Environment results.Environment `json:"environment"`
	Plan        results.Plan        `json:"plan"`
	Scenarios   []ScenarioInfo      `json:"scenarios"`
	// Notes are the run's own remarks (results.Run.Notes), e.g. why
	// datapath CPU and memory were not recorded.
	Notes []string `json:"notes,omitempty"`
	// Twins say how a run of twins on one target was laid out, each
	// part's switches and proof, and the parts not measured.
	Twins []string `json:"twins,omitempty"`
}

// ScenarioInfo is a scenario's target with its details flattened to
// strings (topology left out: it is in results.json).
type ScenarioInfo struct {
	Name    string            `json:"name"`
	Kind    string            `json:"kind"`
	Details map[string]string `json:"details"`
	// Sysctls are the endpoints' effective sysctls as their agents read
	// them, on one line (sysctls.go); "" when not recorded.
	Sysctls string `json:"sysctls,omitempty"`
	// Checks are how the scenario's parts proved themselves on before
	// measuring, a line per label (checks.go); none without parts.
	Checks []CheckLine `json:"checks,omitempty"`
}

// Column is one (run, scenario).
type Column struct {
	Label    string `json:"label"`
	Run      int    `json:"run"` // index into Runs
	RunID    string `json:"run_id"`
	Scenario string `json:"scenario"`
	// Against is the column this one's verdicts compare with: the first,
	// or a scenario it adds parts to (against.go).
	Against int `json:"against,omitempty"`
	// Adds is what this column's scenario adds to the one it is compared
	// with ("policy"), "" when it is compared with the first column as
	// another contender.
	Adds string `json:"adds,omitempty"`
	// parts are the scenario's parts as the run recorded them (against.go).
	parts results.ScenarioName
}

// Section is one (test, placement) with every metric in every column.
type Section struct {
	Test      string `json:"test"`
	Placement string `json:"placement"`
	About     string `json:"about,omitempty"`
	Kind      string `json:"kind"` // of its samples; "" if none succeeded
	// table is the kind of its test (results.Result.Kind), whose terminal
	// table shows the section even when no sample succeeded.
	table string
	// Samples per column; nil where the column has no such result.
	Samples  []*SampleCount `json:"samples"`
	Metrics  []Row          `json:"metrics"`
	Warnings []string       `json:"warnings,omitempty"`
	// Control says why the section's placement is a control of the
	// comparison (it does not cross what the scenarios vary): its rows get
	// no winner, and a significant difference there is a warning.
	Control string `json:"control,omitempty"`
	// CPU says per column where a unit of work's CPU went on the agents'
	// CPUs (cpu.go); lab runs only.
	CPU []string `json:"cpu,omitempty"`
}

// SampleCount says how many samples a column has and what went wrong.
type SampleCount struct {
	OK         int    `json:"ok"`
	Failed     int    `json:"failed"`
	NotTaken   int    `json:"not_taken"` // planned rounds never taken (interrupted run)
	FirstError string `json:"first_error,omitempty"`
	// Skipped is why the target could not run the test on this placement
	// (results.Result.Skipped); the column then has no samples.
	Skipped string `json:"skipped,omitempty"`
	Streams int    `json:"streams,omitempty"` // flows of an engine test
	// HTTP: samples whose client CPU saturated, or that missed their
	// open-loop target rate.
	ClientSaturated int `json:"client_saturated,omitempty"`
	MissedTarget    int `json:"missed_target,omitempty"`
	// RR: samples flagged for ephemeral-port exhaustion or a stall.
	PortExhausted int `json:"port_exhausted,omitempty"`
	Stalled       int `json:"stalled,omitempty"`
}

// Row is one metric across the columns.
type Row struct {
	Metric   string `json:"metric"`
	Unit     string `json:"unit"`
	Better   string `json:"better"`
	Headline bool   `json:"headline,omitempty"`
	// Values per column; nil where the column lacks the metric.
	Values []*Value `json:"values"`
	// VsBaseline per column: nil for the baseline itself, for missing
	// values and for info metrics.
	VsBaseline []*Delta `json:"vs_baseline"`
	Winner     *Winner  `json:"winner,omitempty"` // nil for info metrics and single columns
}

// GlanceRow is a headline Row with its cell.
type GlanceRow struct {
	Test      string `json:"test"`
	Placement string `json:"placement"`
	Row
}

// Value is one metric in one column: what is displayed and the median of
// the per-sample values with its confidence interval (stats.Describe).
type Value struct {
	N        int   `json:"n"`
	Display  Num   `json:"display"`
	Median   Num   `json:"median"`
	Lo       Num   `json:"ci_lo"`
	Hi       Num   `json:"ci_hi"`
	Coverage Num   `json:"ci_coverage"` // the interval's true confidence (below Level for N < 6)
	Samples  []Num `json:"samples"`
	// LeftOut names this column's rounds that the row leaves out because
	// another column of the same run lacks them (failed, not taken): the
	// cell, its verdicts and the gate all use the rounds every column of
	// the run has, so they show one statistic ("" when none).
	LeftOut string `json:"left_out,omitempty"`
}

// Verdict kinds.
const (
	VerdictSignificant = "significant"
	VerdictNoise       = "within noise"
	// VerdictInconclusive: not significant, and the interval too wide to
	// bound the difference (more rounds needed).
	VerdictInconclusive = "inconclusive"
	VerdictTooFew       = "not enough rounds"
	VerdictNA           = "n/a"
)

// Delta is a column's verdict against the baseline.
type Delta struct {
	Verdict  string `json:"verdict"`
	DeltaPct Num    `json:"delta_pct"` // of the compared values (for loss: of the delivered share)
	Lo       Num    `json:"ci_lo_pct"` // null when unbounded
	Hi       Num    `json:"ci_hi_pct"`
	NoisePct Num    `json:"noise_pct"`
	Coverage Num    `json:"ci_coverage"` // the interval's confidence (exact methods: not always 95%)
	Better   bool   `json:"better"`      // significant and better than the baseline
	Worse    bool   `json:"worse"`       // significant and worse
	P        Num    `json:"p"`           // two-sided p-value; null without a test
	Text     string `json:"text"`
}

// Winner is the verdict of the best column against the runner-up.
type Winner struct {
	Verdict  string `json:"verdict"`
	Label    string `json:"label,omitempty"` // set only when significant
	Best     string `json:"best,omitempty"`  // best median, winner or not
	RunnerUp string `json:"runner_up,omitempty"`
	DeltaPct Num    `json:"delta_pct"`
	Lo       Num    `json:"ci_lo_pct"`
	Hi       Num    `json:"ci_hi_pct"`
	NoisePct Num    `json:"noise_pct"`
	Coverage Num    `json:"ci_coverage"`
	P        Num    `json:"p"` // two-sided p-value; null without a test
	Text     string `json:"text"`
	// AsAsked: the row compares the columns of a question, and Best and
	// RunnerUp are the question's b and a, DeltaPct b against a, whichever
	// median is better.
	AsAsked bool `json:"as_asked,omitempty"`
	// pair is the two columns compared (runner-up, best; a, b as asked).
	pair [2]int
}

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
	overheadVerdicts(rep)
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

// buildColumns adds the runs and a column per run × scenario to rep, and
// returns each column's results by section key and the section keys in
// first-seen order.
func buildColumns(rep *Report, in []Input) (colResults []map[string]results.Result, order []string) {
	seen := map[string]bool{}
	labels := map[string]int{}
	for ri, input := range in {
		run := input.Run
		label := input.Label
		if label == "" {
			label = run.RunID
		}
		rep.Runs = append(rep.Runs, runInfo(run, label))
		for _, sc := range scenarioNames(run) {
			col := Column{Run: ri, RunID: run.RunID, Scenario: sc, Label: columnLabel(run, sc), parts: scenarioParts(run, sc)}
			if len(in) > 1 {
				col.Label = label
				if len(scenarioNames(run)) > 1 {
					col.Label = label + "/" + columnLabel(run, sc)
				}
			}
			if n := labels[col.Label]; n > 0 {
				labels[col.Label]++
				col.Label = fmt.Sprintf("%s#%d", col.Label, n+1)
			} else {
				labels[col.Label] = 1
			}
			m := map[string]results.Result{}
			for _, r := range run.Results {
				if r.Scenario != sc {
					continue
				}
				k := sectionKey(r.Test, sweepPlacement(run, r))
				m[k] = r
				if !seen[k] {
					seen[k] = true
					order = append(order, k)
				}
			}
			rep.Columns = append(rep.Columns, col)
			colResults = append(colResults, m)
		}
	}
	return colResults, order
}

// buildSection is one (test, placement) section: each column's sample
// counts and warnings, and the metric rows with their verdicts.
func buildSection(rep *Report, k string, colResults []map[string]results.Result, opt Options) (Section, error) {
	test, placement, _ := strings.Cut(k, "\x00")
	sec := Section{Test: test, Placement: placement}
	if t, ok := kinds.LookupTest(test); ok {
		sec.About = t.About
	}
	series := make([]*results.Series, len(rep.Columns))
	for ci, col := range rep.Columns {
		r, ok := colResults[ci][k]
		if !ok {
			sec.Samples = append(sec.Samples, nil)
			continue
		}
		s, err := results.Metrics(r)
		if err != nil {
			return sec, fmt.Errorf("%s: %w", col.Label, err)
		}
		series[ci] = &s
		if sec.table == "" {
			sec.table = r.Kind()
		}
		if sec.Kind == "" {
			sec.Kind = s.Kind
		}
		sc := &SampleCount{OK: s.Samples - s.Failed, Failed: s.Failed, FirstError: squash(s.FirstError),
			Streams: r.Options.Streams, ClientSaturated: s.ClientSaturated, MissedTarget: s.MissedTarget,
			PortExhausted: s.PortExhausted, Stalled: s.Stalled}
		if r.HTTPOptions != nil {
			sc.Streams = 0
		}
		if planned := rep.Runs[col.Run].Plan.Rounds; planned > s.Samples && r.Skipped == "" {
			sc.NotTaken = planned - s.Samples
		}
		sec.Samples = append(sec.Samples, sc)
		prefix := ""
		if len(rep.Columns) > 1 {
			prefix = col.Label + ": "
		}
		sc.Skipped = squash(r.Skipped) // shown with the samples, no warning needed
		if sc.Failed > 0 {
			sec.Warnings = append(sec.Warnings, fmt.Sprintf("%s%d of %d samples failed (first: %s)", prefix, sc.Failed, s.Samples, sc.FirstError))
		}
		if sc.NotTaken > 0 {
			sec.Warnings = append(sec.Warnings, fmt.Sprintf("%s%d planned samples were never taken", prefix, sc.NotTaken))
		}
		for _, w := range s.Warnings {
			sec.Warnings = append(sec.Warnings, prefix+squash(w))
		}
		if w := unpacedUDP(r, &s); w != "" {
			sec.Warnings = append(sec.Warnings, prefix+w)
		}
	}
	sec.Metrics = rows(series, rep.Columns, opt)
	if sec.Kind == "" && !allSkipped(sec.Samples) {
		sec.Warnings = append(sec.Warnings, "no successful sample in any column")
	}
	return sec, nil
}

// TableKind is the kind whose terminal table shows the section: its
// samples' kind, or its test's when none succeeded.
func (s Section) TableKind() string {
	if s.Kind != "" {
		return s.Kind
	}
	return s.table
}

func allSkipped(scs []*SampleCount) bool {
	for _, sc := range scs {
		if sc != nil && sc.Skipped == "" {
			return false
		}
	}
	return true
}

func sectionKey(test, placement string) string { return test + "\x00" + placement }

// rows builds one Row per metric seen in any column, in first-seen order.
func rows(series []*results.Series, cols []Column, opt Options) []Row {
	var names []string
	proto := map[string]results.Metric{}
	for _, s := range series {
		if s == nil {
			continue
		}
		for _, m := range s.Metrics {
			if _, ok := proto[m.Name]; !ok {
				proto[m.Name] = m
				names = append(names, m.Name)
			}
		}
	}
	var out []Row
	for _, name := range names {
		p := proto[name]
		row := Row{Metric: name, Unit: p.Unit, Better: string(p.Better), Headline: p.Headline,
			Values: make([]*Value, len(cols)), VsBaseline: make([]*Delta, len(cols))}
		ms := make([]*results.Metric, len(cols))
		for ci, s := range series {
			if s == nil {
				continue
			}
			if m := s.Metric(name); m != nil && len(m.Values) > 0 {
				ms[ci] = m
				// A headline in any column is a headline of the row.
				row.Headline = row.Headline || m.Headline
			}
		}
		var left []string
		ms, left = onCommonRounds(ms, cols)
		for ci, m := range ms {
			if m != nil {
				row.Values[ci] = value(m, opt)
				row.Values[ci].LeftOut = left[ci]
			}
		}
		if p.Judged() {
			for ci := 1; ci < len(cols); ci++ {
				if b := cols[ci].Against; ms[b] != nil && ms[ci] != nil {
					row.VsBaseline[ci] = delta(ms[b], ms[ci], opt, cols[b].Run == cols[ci].Run)
					row.VsBaseline[ci].Text = nameSides(row.VsBaseline[ci].Text, cols[b].Label, cols[ci].Label)
				}
			}
			switch {
			case anyAgainst(cols):
				// Filled once the verdicts are final (overheadVerdicts).
				row.Winner = &Winner{Verdict: VerdictNA, P: Num(math.NaN())}
			case len(cols) > 1:
				row.Winner = winner(ms, cols, opt)
			}
		}
		out = append(out, row)
	}
	return out
}

func value(m *results.Metric, opt Options) *Value {
	e := stats.Describe(m.Values, stats.CIOptions{Level: opt.Level})
	v := &Value{N: e.N, Display: Num(m.Display), Median: Num(e.Median),
		Lo: Num(e.Lo), Hi: Num(e.Hi), Coverage: Num(e.Coverage)}
	for _, x := range m.Values {
		v.Samples = append(v.Samples, Num(x))
	}
	return v
}

// compare judges b against baseline a on what the metric compares.
// Columns of one interleaved run (paired) are compared round by round:
// each round's ratio, in which what the machine did that round cancels
// (stats.ComparePaired); columns of separate runs, or steps of a sweep, by
// ranks (stats.CompareUnpaired).
func compare(a, b *results.Metric, opt Options, paired bool) stats.Verdict {
	va, higher, noun := a.ComparedValues()
	vb, _, _ := b.ComparedValues()
	co := stats.CompareOptions{HigherIsBetter: higher, Noun: noun,
		MinEffectPct: opt.MinEffectPct, MinSamples: opt.MinSamples, Level: opt.Level}
	if !paired {
		return stats.CompareUnpaired(va, vb, co)
	}
	pa, pb := byRound(va, a.Rounds, vb, b.Rounds)
	return stats.ComparePaired(pa, pb, co)
}

// byRound aligns two metrics' values by round: the rounds both have, in
// order (a round one side lacks, failed or missing, is left out).
func byRound(va []float64, ra []int, vb []float64, rb []int) (pa, pb []float64) {
	at := map[int]float64{}
	for i, r := range rb {
		if i < len(vb) {
			at[r] = vb[i]
		}
	}
	for i, r := range ra {
		if y, ok := at[r]; ok && i < len(va) {
			pa, pb = append(pa, va[i]), append(pb, y)
		}
	}
	return pa, pb
}

// kindOf classifies a verdict.
func kindOf(v stats.Verdict, _ Options) string {
	switch {
	case v.Significant:
		return VerdictSignificant
	case strings.HasPrefix(v.Text, "not enough"):
		return VerdictTooFew
	case strings.HasPrefix(v.Text, "n/a"):
		return VerdictNA
	case v.Inconclusive:
		return VerdictInconclusive
	}
	return VerdictNoise
}

func tooFewText(v stats.Verdict) string {
	return fmt.Sprintf("not enough rounds for a verdict (n=%d)", v.N)
}

func delta(base, m *results.Metric, opt Options, paired bool) *Delta {
	v := compare(base, m, opt, paired)
	d := &Delta{Verdict: kindOf(v, opt), DeltaPct: Num(v.DeltaPct), Lo: Num(v.Lo), Hi: Num(v.Hi), NoisePct: Num(v.NoisePct),
		Coverage: Num(v.Coverage), P: tested(v, opt)}
	switch d.Verdict {
	case VerdictSignificant:
		d.Better, d.Worse = v.Better == "b", v.Better == "a"
		d.Text = strings.TrimPrefix(v.Text, "b is ")
	case VerdictTooFew:
		d.Text = tooFewText(v)
	default:
		d.Text = v.Text
	}
	return d
}

// winner compares the best column (by median of the compared values) with
// the runner-up.
func winner(ms []*results.Metric, cols []Column, opt Options) *Winner {
	type cand struct {
		i   int
		med float64
	}
	var cs []cand
	higher := false
	for i, m := range ms {
		if m == nil {
			continue
		}
		vals, h, _ := m.ComparedValues()
		higher = h
		cs = append(cs, cand{i, results.Median(vals)})
	}
	if len(cs) < 2 {
		return &Winner{Verdict: VerdictNA, Text: "n/a (fewer than two columns have it)"}
	}
	sort.SliceStable(cs, func(a, b int) bool {
		if higher {
			return cs[a].med > cs[b].med
		}
		return cs[a].med < cs[b].med
	})
	best, second := cs[0].i, cs[1].i
	v := compare(ms[second], ms[best], opt, cols[second].Run == cols[best].Run)
	if v.DeltaPct != 0 && (v.DeltaPct > 0) != higher && !math.IsNaN(v.DeltaPct) {
		// The comparison's own estimate favours the runner-up (its medians
		// and the tested estimate disagree in order): the verdict decides
		// who is named, never the other way round.
		best, second = second, best
		v = compare(ms[second], ms[best], opt, cols[second].Run == cols[best].Run)
	}
	v.Text = nameSides(v.Text, cols[second].Label, cols[best].Label)
	w := &Winner{pair: [2]int{second, best}, Verdict: kindOf(v, opt), Best: cols[best].Label, RunnerUp: cols[second].Label,
		DeltaPct: Num(v.DeltaPct), Lo: Num(v.Lo), Hi: Num(v.Hi), NoisePct: Num(v.NoisePct), Coverage: Num(v.Coverage), P: tested(v, opt)}
	switch w.Verdict {
	case VerdictSignificant:
		w.Label = cols[best].Label
		// "b is 5.1% higher throughput (significant, ...)" → "native: 5.1%
		// higher throughput than vxlan (significant, ...)".
		body := strings.TrimPrefix(v.Text, "b is ")
		if i := strings.Index(body, " ("); i >= 0 {
			body = body[:i] + " than " + cols[second].Label + body[i:]
		}
		w.Text = cols[best].Label + ": " + body
	case VerdictTooFew:
		w.Text = tooFewText(v)
	default:
		// Not significant: name the two columns, so the sign of the
		// difference (best against runner-up) reads right.
		w.Text = cols[best].Label + " vs " + cols[second].Label + ": " + strings.Replace(v.Text, "(b is ", "("+cols[best].Label+" is ", 1)
	}
	return w
}

// scenarioNames lists a run's scenarios: the declared ones, then any name
// only its results use (older runs have none: "").
func scenarioNames(run *results.Run) []string {
	var names []string
	seen := map[string]bool{}
	for _, sc := range run.Scenarios {
		if !seen[sc.Name] {
			seen[sc.Name] = true
			names = append(names, sc.Name)
		}
	}
	for _, r := range run.Results {
		if !seen[r.Scenario] {
			seen[r.Scenario] = true
			names = append(names, r.Scenario)
		}
	}
	return names
}

// scenarioParts are the parts of run's scenario named sc, as recorded
// (results.Scenario.ScenarioName reads older files); none for an unnamed one.
func scenarioParts(run *results.Run, sc string) results.ScenarioName {
	if sc == "" {
		return nil
	}
	for _, s := range run.Scenarios {
		if s.Name == sc {
			return s.ScenarioName()
		}
	}
	return results.Scenario{Name: sc}.ScenarioName()
}

// columnLabel names a scenario; results without one (single-scenario runs
// of older versions) are named after their lab or target kind.
func columnLabel(run *results.Run, sc string) string {
	if sc != "" {
		return sc
	}
	if l, ok := run.Target.Details["lab"].(string); ok && l != "" {
		return l
	}
	if run.Target.Kind != "" {
		return run.Target.Kind
	}
	return "run"
}

func runInfo(run *results.Run, label string) RunInfo {
	ri := RunInfo{Label: label, RunID: run.RunID, Status: run.Status, Error: squash(run.Error), Teardown: squash(run.Teardown),
		Start: run.Start, End: run.End, Tool: run.Tool, Environment: run.Environment, Plan: run.Plan, Notes: run.Notes, Twins: twinsLines(run)}
	scs := run.Scenarios
	if len(scs) == 0 {
		scs = []results.Scenario{{Name: columnLabel(run, ""), Target: run.Target}}
	}
	for _, sc := range scs {
		ri.Scenarios = append(ri.Scenarios, ScenarioInfo{Name: sc.Name, Kind: sc.Target.Kind, Details: flatten(sc.Target.Details),
			Sysctls: sysctlsText(run, sc.Target.Details), Checks: checkLines(sc)})
	}
	return ri
}

// flatten turns target details into strings: scalars as they are, maps
// one level deep as key.sub (sysctls), lists and deeper structures
// (topology) left to results.json.
func flatten(d map[string]any) map[string]string {
	out := map[string]string{}
	for k, v := range d {
		if checkDetails[k] {
			continue // lines of their own (ScenarioInfo.Checks)
		}
		switch x := v.(type) {
		case map[string]any:
			for sk, sv := range x {
				if s, ok := scalar(sv); ok {
					out[k+"."+sk] = s
				}
			}
		case map[string]string:
			for sk, sv := range x {
				out[k+"."+sk] = sv
			}
		default:
			if s, ok := scalar(v); ok {
				out[k] = s
			}
		}
	}
	return out
}

func scalar(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case bool:
		return strconv.FormatBool(x), true
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64), true
	case int, int64, int32, uint, uint64, uint32:
		return fmt.Sprint(x), true
	}
	return "", false
}

// runWarnings flags runs that did not complete, plans that differ between
// compared runs, and runs with too few rounds for any verdict.
func runWarnings(rep *Report, opt Options) []string {
	var w []string
	for _, r := range rep.Runs {
		if r.Status != results.StatusComplete {
			msg := fmt.Sprintf("run %s is %s", r.Label, r.Status)
			if r.Error != "" {
				msg += " (" + r.Error + ")"
			}
			w = append(w, msg+": only its completed samples are reported")
		}
		if r.Teardown != "" {
			w = append(w, fmt.Sprintf("run %s: teardown failed (%s): its samples stand, but the lab or cluster may hold leftovers (cnibench lab down, cnibench k8s cleanup)", r.Label, r.Teardown))
		}
		for _, n := range r.Notes {
			w = append(w, "run "+r.Label+": "+squash(n))
		}
		if r.Plan.Rounds > 0 && r.Plan.Rounds < opt.MinSamples && len(rep.Columns) > 1 {
			w = append(w, fmt.Sprintf("run %s has %d round(s): a verdict needs at least %d per column, so no difference in it is judged (use --rounds %d or more)",
				r.Label, r.Plan.Rounds, opt.MinSamples, max(opt.MinSamples, 5)))
		}
	}
	if len(rep.Runs) > 1 {
		base := rep.Runs[0].Plan
		for _, r := range rep.Runs[1:] {
			p := r.Plan
			var diffs []string
			if p.Duration != base.Duration {
				diffs = append(diffs, fmt.Sprintf("duration %s vs %s", time.Duration(base.Duration), time.Duration(p.Duration)))
			}
			if p.Warmup != base.Warmup {
				diffs = append(diffs, fmt.Sprintf("warmup %s vs %s", time.Duration(base.Warmup), time.Duration(p.Warmup)))
			}
			if p.Mode != base.Mode {
				diffs = append(diffs, fmt.Sprintf("mode %s vs %s", base.Mode, p.Mode))
			}
			if p.Streams != base.Streams {
				diffs = append(diffs, fmt.Sprintf("streams %d vs %d", base.Streams, p.Streams))
			}
			if len(diffs) > 0 {
				w = append(w, fmt.Sprintf("plans differ between %s and %s (%s): compare with care", rep.Runs[0].Label, r.Label, strings.Join(diffs, ", ")))
			}
		}
	}
	return w
}

// squash puts a message on one line with single spaces.
func squash(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// unpacedUDP explains a UDP_STREAM's loss when its sender was not paced:
// it offers as fast as it can (iperf3 -u -b 0), so the loss is the
// receiver's socket overflowing, not the datapath dropping.
func unpacedUDP(r results.Result, s *results.Series) string {
	if r.Options.Test != engineapi.UDPStream || r.Options.RateBitsPerSec > 0 {
		return ""
	}
	m := s.Metric(results.MetricLoss)
	if m == nil || m.Display < 5 {
		return ""
	}
	return fmt.Sprintf("%.1f%% UDP loss with an unpaced sender (it offers as fast as it can, as iperf3 -u -b 0): the receiver's socket overflows; "+
		"that is not the datapath dropping, so judge the delivered throughput, or pace the sender (cnibench client UDP_STREAM --rate)", m.Display)
}

// suspectSamples lifts to the top of the report what makes a section's
// numbers suspect, so it is not found only deep in the test sections:
// saturated clients, local ports exhausted, stalled flows.
func suspectSamples(sec Section, cols []Column) []string {
	var out []string
	for i, sc := range sec.Samples {
		if sc == nil {
			continue
		}
		var what []string
		if sc.ClientSaturated > 0 {
			what = append(what, fmt.Sprintf("client CPU saturated in %d of %d samples (the rate may be the client's limit)", sc.ClientSaturated, sc.OK+sc.Failed))
		}
		if sc.PortExhausted > 0 {
			what = append(what, fmt.Sprintf("the client ran out of local ports in %d samples", sc.PortExhausted))
		}
		if sc.Stalled > 0 {
			what = append(what, fmt.Sprintf("a flow stalled for a second or more in %d samples", sc.Stalled))
		}
		if len(what) > 0 {
			out = append(out, fmt.Sprintf("%s %s, %s: %s", sec.Test, sec.Placement, cols[i].Label, strings.Join(what, "; ")))
		}
	}
	return out
}

// onCommonRounds restricts the metrics of the two columns of one
// interleaved run in a row to the rounds both have, so that their cells
// (the median of those rounds), their paired verdict and the winner all
// read the same rounds: with native at 7 rounds and vxlan at 5 (rounds 6
// and 7 failed), native's cell is not the median of 7 rounds beside a
// verdict on 5. With three or more columns of a run, each verdict pairs
// the rounds its own two columns have (compare), and the cells keep every
// value: one flaky column must not take rounds from every other
// comparison. Columns of other runs keep every value too. left names, per
// column, the rounds left out.
func onCommonRounds(ms []*results.Metric, cols []Column) (out []*results.Metric, left []string) {
	out, left = append([]*results.Metric(nil), ms...), make([]string, len(ms))
	byRun := map[int][]int{}
	for ci, m := range ms {
		if m != nil {
			byRun[cols[ci].Run] = append(byRun[cols[ci].Run], ci)
		}
	}
	for _, cis := range byRun {
		if len(cis) != 2 {
			continue
		}
		common := map[int]int{}
		for _, ci := range cis {
			for _, r := range ms[ci].Rounds {
				common[r]++
			}
		}
		for _, ci := range cis {
			m := ms[ci]
			if len(m.Rounds) != len(m.Values) {
				continue // older results without rounds: nothing to align
			}
			var vals []float64
			var rounds, dropped []int
			for i, r := range m.Rounds {
				if common[r] == len(cis) {
					vals, rounds = append(vals, m.Values[i]), append(rounds, r)
				} else {
					dropped = append(dropped, r)
				}
			}
			if len(dropped) == 0 || len(vals) == 0 {
				continue // nothing left out, or nothing in common to show
			}
			c := *m
			c.Values, c.Rounds, c.Display = vals, rounds, results.Median(vals)
			out[ci] = &c
			left[ci] = fmt.Sprintf("round %s left out: the other column lacks it", joinInts(dropped))
			if len(dropped) > 1 {
				left[ci] = fmt.Sprintf("rounds %s left out: the other column lacks them", joinInts(dropped))
			}
		}
	}
	return out, left
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ", ")
}

// nameSides puts the columns' labels into a verdict's notes on the sides
// ("b delivered nothing in 2 of 7 rounds" → "vxlan delivered …").
func nameSides(text, a, b string) string {
	text = strings.ReplaceAll(text, "; a delivered nothing", "; "+a+" delivered nothing")
	text = strings.ReplaceAll(text, ", b delivered nothing", ", "+b+" delivered nothing")
	return strings.ReplaceAll(text, "; b delivered nothing", "; "+b+" delivered nothing")
}
