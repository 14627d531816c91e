package report

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/cnibench/cnibench/published"
	"github.com/cnibench/cnibench/results"
	"github.com/cnibench/cnibench/stats"
)

// reproducedSection opens the report of a profile named after a published
// report (results.Plan.Reproduces) with the original's table: its rows
// and columns in its order, the published figure (package published), ours
// with its interval, ours ÷ published, and the run's verdict against the
// column a cell is compared with; then one line per shape — a ratio the
// original published that carries over between machines — saying whether
// it holds here, judged by the run's own paired verdicts.
type reproducedSection struct{}

const reproducedKey = "reproduced"

// Reproduced is the section's model (report.json extra_sections.reproduced).
type Reproduced struct {
	ID       string           `json:"id"`
	Title    string           `json:"title"`
	Source   string           `json:"source"`
	URL      string           `json:"url,omitempty"`
	Date     string           `json:"date"`
	Hardware string           `json:"hardware"`
	Cells    []ReproducedLine `json:"cells"`
	Shapes   []ShapeLine      `json:"shapes"`
}

// ReproducedLine is one of the original's cells beside ours.
type ReproducedLine struct {
	Row    string `json:"row"`
	Column string `json:"column"`
	// As is what we measured for it: test, placement, scenario, metric.
	As        string          `json:"as,omitempty"`
	Published *published.Cell `json:"published,omitempty"`
	Ours      *Value          `json:"ours,omitempty"`
	Unit      string          `json:"unit,omitempty"`
	// NotMeasured says why Ours is missing.
	NotMeasured string `json:"not_measured,omitempty"`
	// Ratio is ours ÷ published (published in our unit), with our
	// median's interval scaled alike; NaN without both.
	Ratio, RatioLo, RatioHi Num    `json:"-"`
	RatioText               string `json:"ours_over_published,omitempty"`
	// Against is the column this cell's column is compared with, its
	// verdict, and the published change between the same two columns.
	Against      string `json:"against,omitempty"`
	VsAgainst    *Delta `json:"vs_against,omitempty"`
	PublishedPct Num    `json:"published_pct,omitempty"`
}

// ShapeLine is a shape as judged here.
type ShapeLine struct {
	Ask string `json:"ask"`
	// PublishedRatio is B ÷ A as published.
	PublishedRatio Num `json:"published_ratio"`
	EvenWithinPct  Num `json:"even_within_pct"`
	// Delta is the run's verdict on B against A (the report's own, or
	// for two measurements of one scenario one computed as the report
	// computes a column's, in the false-discovery family); flipped when
	// the report compares A against B.
	Delta   *Delta `json:"verdict,omitempty"`
	flipped bool
	// EffectPct and its interval are B against A, whichever way Delta
	// compares them.
	EffectPct Num `json:"effect_pct"`
	Lo        Num `json:"ci_lo_pct"`
	Hi        Num `json:"ci_hi_pct"`
	// Holds is "holds", "does not hold", "not shown" or "not judged";
	// Text says it in a line.
	Holds string `json:"holds"`
	Text  string `json:"text"`
	// own: Delta was computed here, not taken from a row.
	own bool
	// note says what the published ratio is of when not of the cells'
	// values (a loss's delivered share).
	note string
}

// The answers a shape gets.
const (
	ShapeHolds     = "holds"
	ShapeDoesNot   = "does not hold"
	ShapeNotShown  = "not shown"
	ShapeNotJudged = "not judged"
)

func (reproducedSection) stage() buildStage { return beforeControl }

func (reproducedSection) build(rep *Report, in []Input) error {
	if len(in) != 1 || in[0].Run.Plan.Reproduces == nil {
		return nil // a comparison of runs is no reproduction of one report
	}
	run, spec := in[0].Run, in[0].Run.Plan.Reproduces
	pub, err := published.Lookup(spec.Report)
	if err != nil {
		// A results file from another build: the rest of the report stands.
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("the run reproduces a published report this build does not hold (%v): its table is left out", err))
		return nil
	}
	m := &Reproduced{ID: pub.ID, Title: pub.Title, Source: pub.Source, URL: pub.URL, Date: pub.Date, Hardware: pub.Hardware}
	for _, c := range spec.Cells {
		m.Cells = append(m.Cells, reproducedLine(rep, run, spec, pub, c))
	}
	for _, s := range spec.Shapes {
		m.Shapes = append(m.Shapes, shapeLine(rep, run, spec, pub, s))
	}
	rep.setExtra(reproducedKey, m)
	return nil
}

// reproduced is the report's model of the section; nil without one.
func (rep *Report) reproduced() *Reproduced {
	m, _ := rep.Extra[reproducedKey].(*Reproduced)
	return m
}

// located is where a reproduced cell's measurement is in the report.
type located struct {
	sec, row, col int
	why           string // not found: why
}

// locate finds a mapped cell's section, row and column.
func locate(rep *Report, run *results.Run, c results.ReproducedCell) located {
	if c.NoEquivalent != "" {
		return located{why: "no equivalent here: " + c.NoEquivalent}
	}
	scenario := c.Scenario
	if scenario == "" {
		scenario = scenarioNames(run)[0]
	}
	col := -1
	for i, cl := range rep.Columns {
		if cl.Scenario == scenario {
			col = i
		}
	}
	if col < 0 {
		return located{why: fmt.Sprintf("not measured in this run: scenario %s was not run (--scenarios)", scenario)}
	}
	where := c.Placement
	if c.Services > 0 || len(run.Sweeps) > 0 {
		if why := stepMissing(run, scenario, c.Services); why != "" {
			return located{why: why}
		}
		where = stepPlacement(c.Placement, c.Services, sweptAfterRounds(run))
	}
	for si, sec := range rep.Sections {
		if sec.Test != c.Test || sec.Placement != where {
			continue
		}
		if sc := sec.Samples[col]; sc == nil || sc.OK == 0 {
			why := fmt.Sprintf("not measured in this run: %s on %s has no result in %s", c.Test, c.Placement, rep.Columns[col].Label)
			if sc != nil && sc.Skipped != "" {
				why = "not measured on this target: " + sc.Skipped
			} else if sc != nil {
				why = fmt.Sprintf("not measured: every sample of %s on %s failed in %s", c.Test, c.Placement, rep.Columns[col].Label)
			}
			return located{why: why}
		}
		for ri, row := range sec.Metrics {
			if row.Metric == c.Metric && row.Values[col] != nil {
				return located{sec: si, row: ri, col: col}
			}
		}
		return located{why: fmt.Sprintf("not measured: %s on %s has no %s", c.Test, c.Placement, c.Metric)}
	}
	return located{why: fmt.Sprintf("not measured in this run: %s on %s was not in the plan (--tests, --placements)", c.Test, c.Placement)}
}

// reproducedLine puts one of the original's cells beside ours.
func reproducedLine(rep *Report, run *results.Run, spec *results.Reproduction, pub published.Report, c results.ReproducedCell) ReproducedLine {
	l := ReproducedLine{Row: c.Row, Column: c.Column, Ratio: Num(math.NaN()), RatioLo: Num(math.NaN()), RatioHi: Num(math.NaN()), PublishedPct: Num(math.NaN())}
	if c.NoEquivalent == "" {
		sc := c.Scenario
		if sc == "" {
			sc = "the run's scenario"
		}
		l.As = strings.Join([]string{c.Test, c.Placement, sc, c.Metric}, " · ")
	}
	if p, ok := pub.Cell(c.Row, c.Column); ok {
		l.Published = &p
	}
	if c.Metric == results.MetricMapMemory {
		return mapMemoryLine(run, l, c)
	}
	at := locate(rep, run, c)
	if at.why != "" {
		l.NotMeasured = at.why
		return l
	}
	row := rep.Sections[at.sec].Metrics[at.row]
	if c.Change {
		return changeLine(rep, l, row, at)
	}
	l.Ours, l.Unit = row.Values[at.col], row.Unit
	if l.Published != nil {
		l.Ratio, l.RatioLo, l.RatioHi, l.RatioText = oursOverPublished(l.Ours, row.Unit, *l.Published)
	}
	// The run's verdict against the column this one is compared with, and
	// the published change between the same two columns of this row.
	against := rep.Columns[at.col].Against
	if d := row.VsBaseline[at.col]; d != nil && against != at.col {
		l.Against, l.VsAgainst = rep.Columns[against].Label, d
		for _, o := range spec.Cells {
			if o.Row == c.Row && o.Test == c.Test && o.Placement == c.Placement && o.Metric == c.Metric && o.Scenario == rep.Columns[against].Scenario {
				if pa, ok := pub.Cell(o.Row, o.Column); ok && l.Published != nil && pa.Value != 0 {
					l.PublishedPct = Num(100 * (l.Published.Value/pa.Value - 1))
					if complemented(run, rep.Columns[at.col].Scenario, c) && pa.Value < 100 {
						// As ours: the change of the delivered share.
						l.PublishedPct = Num(100 * ((100-l.Published.Value)/(100-pa.Value) - 1))
					}
				}
			}
		}
	}
	return l
}

// changeLine fills a cell whose published figure is a change in %
// (results.ReproducedCell.Change): ours is the cell's column against the
// column without the added part, as the run's verdict says it.
func changeLine(rep *Report, l ReproducedLine, row Row, at located) ReproducedLine {
	col, d := partChange(rep, at)
	if d == nil {
		l.NotMeasured = fmt.Sprintf("not measured: a change needs the same datapath without the part in this run, and %s has none (--scenarios)", col.Label)
		return l
	}
	l.Ours, l.Unit = row.Values[at.col], row.Unit
	l.Against, l.VsAgainst = rep.Columns[col.Against].Label, d
	if l.Published != nil {
		l.PublishedPct = Num(l.Published.Value)
	}
	l.RatioText = "– (a change)"
	return l
}

// partChange is a change cell's column and the run's verdict on it
// against the same datapath without the part (its Against); a nil Delta
// when the run has no such column.
func partChange(rep *Report, at located) (Column, *Delta) {
	col := rep.Columns[at.col]
	d := rep.Sections[at.sec].Metrics[at.row].VsBaseline[at.col]
	if col.Adds == "" {
		return col, nil
	}
	return col, d
}

// oursOverPublished is our median ÷ the published figure in our unit,
// with our interval's bounds scaled alike.
func oursOverPublished(v *Value, unit string, p published.Cell) (r, lo, hi Num, text string) {
	nan := Num(math.NaN())
	pv, ok := published.Convert(p.Value, p.Unit, unit)
	switch {
	case !ok:
		return nan, nan, nan, fmt.Sprintf("units differ (%s published, %s here)", p.Unit, unit)
	case pv == 0:
		return nan, nan, nan, "published 0: no ratio"
	}
	r, lo, hi = Num(float64(v.Median)/pv), Num(float64(v.Lo)/pv), Num(float64(v.Hi)/pv)
	text = fmt.Sprintf("%.3g×", float64(r))
	if v.N > 1 && !math.IsNaN(float64(lo)) && !math.IsNaN(float64(hi)) {
		text += fmt.Sprintf(" (%.3g×–%.3g×)", float64(lo), float64(hi))
	}
	return r, lo, hi, text
}

const (
	reproducedHeading = "Reproduced: "
	reproducedLead    = "The original's table in its order: the published figure (published/reports.json), ours (median over rounds, 95% CI), " +
		"ours ÷ published, and, where this run compares the cell's column with another, the published change between the two and ours. " +
		"Absolute numbers belong to their hardware; the shapes below are what carries over."
)

// reproducedView is the section as both formats show it.
type reproducedView struct {
	Heading, Source, Lead string
	Head                  []string
	Rows                  [][]cellView
	Shapes                []shapeView
}

// shapeView is a shape's line and its answer, coloured in HTML.
type shapeView struct {
	Text  string
	Holds cellView
}

func newReproducedView(rep *Report, m *Reproduced) reproducedView {
	v := reproducedView{Heading: reproducedHeading + m.Title, Lead: reproducedLead,
		Head: []string{"Original row", "Column", "Measured here as", "Published", "Ours", "Ours ÷ published", "Against"}}
	v.Source = fmt.Sprintf("%s, %s; %s.", m.Source, m.Date, m.Hardware)
	if m.URL != "" {
		v.Source = fmt.Sprintf("%s, %s (%s); %s.", m.Source, m.Date, m.URL, m.Hardware)
	}
	for _, l := range m.Cells {
		pubText := publishedText(l.Published)
		if l.Published != nil && l.Published.OwnProvenance(published.Report{Source: m.Source, Date: m.Date, Hardware: m.Hardware}) {
			pubText += fmt.Sprintf(" (%s, %s; %s)", l.Published.Source, l.Published.Date, l.Published.Hardware)
		}
		row := []cellView{{l.Row, "nw"}, {l.Column, "nw"}, {l.As, ""}, {pubText, "num"}}
		if l.NotMeasured != "" {
			row = append(row, cellView{l.NotMeasured, "muted"}, cellView{"", ""}, cellView{"", ""})
			v.Rows = append(v.Rows, row)
			continue
		}
		row = append(row, cellView{cellText(l.Ours, rep.Options.Level) + " " + l.Unit, "num"}, cellView{l.RatioText, "num"})
		against := cellView{"", "verdict"}
		if l.VsAgainst != nil {
			against = deltaCell(l.VsAgainst)
			against.Text = "vs " + l.Against + ": "
			if !math.IsNaN(float64(l.PublishedPct)) {
				against.Text += "published " + stats.SignedPct(float64(l.PublishedPct)) + "; "
			}
			against.Text += "ours " + l.VsAgainst.Text
		}
		v.Rows = append(v.Rows, append(row, against))
	}
	for _, s := range m.Shapes {
		class := "verdict muted"
		switch s.Holds {
		case ShapeHolds:
			class = "verdict better"
		case ShapeDoesNot:
			class = "verdict worse"
		}
		v.Shapes = append(v.Shapes, shapeView{Text: s.Text, Holds: cellView{s.Holds, class}})
	}
	return v
}

// publishedText is a published figure as the original printed it: its
// own value, or the range it gave for the whole row; "–" for none.
func publishedText(p *published.Cell) string {
	if p == nil {
		return "–"
	}
	t := printedNum(p.Value) + " " + p.Unit
	if p.Ranged() {
		t = printedNum(p.Low) + "–" + printedNum(p.High) + " " + p.Unit + " (the row's range)"
	}
	if p.Approx {
		t = "≈ " + t
	}
	return t
}

// printedNum is a published bound with the digits the report printed
// (10.92, not 10.9), thousands grouped as fmtNum groups them.
func printedNum(v float64) string {
	if math.Abs(v) >= 1000 {
		return fmtNum(v)
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

func (reproducedSection) markdown(b *strings.Builder, rep *Report) {
	m := rep.reproduced()
	if m == nil {
		return
	}
	v := newReproducedView(rep, m)
	b.WriteString("\n## " + mdText(v.Heading) + "\n\n" + mdText(v.Source) + " " + mdText(v.Lead) + "\n\n")
	mdRow(b, v.Head...)
	mdSep(b, len(v.Head), 3, 6)
	for _, r := range v.Rows {
		mdRow(b, cellTexts(r)...)
	}
	b.WriteString("\nShapes (each judged with the run's paired verdicts, after the false-discovery control):\n\n")
	for _, s := range v.Shapes {
		b.WriteString("- " + mdText(s.Text) + "\n")
	}
	if len(v.Shapes) == 0 {
		b.WriteString("- none: the original published no ratio this run can judge\n")
	}
	b.WriteString("\n")
}

var reproducedHTML = sectionTmpl("reproduced", `<h2 id="reproduced">{{.Heading}}</h2>
<p>{{.Source}} {{.Lead}}</p>
<table>
<tr>{{range .Head}}<th>{{.}}</th>{{end}}</tr>
{{range .Rows}}<tr>{{range .}}<td class="{{.Class}}">{{.Text}}</td>{{end}}</tr>
{{end}}</table>
<p>Shapes (each judged with the run's paired verdicts, after the false-discovery control):</p>
<table>
<tr><th>Here</th><th>Shape</th></tr>
{{range .Shapes}}<tr><td class="{{.Holds.Class}} nw">{{.Holds.Text}}</td><td>{{.Text}}</td></tr>
{{else}}<tr><td colspan="2">none: the original published no ratio this run can judge</td></tr>
{{end}}</table>

`)

func (reproducedSection) html(b *strings.Builder, rep *Report) error {
	m := rep.reproduced()
	if m == nil {
		return nil
	}
	return reproducedHTML.Execute(b, newReproducedView(rep, m))
}
