package report

import (
	"fmt"
	"html/template"
	"math"
	"slices"
	"strings"

	"github.com/cnibench/cnibench/engine/kinds"
	"github.com/cnibench/cnibench/results"
	"github.com/cnibench/cnibench/stats"
)

// LagRatio is the pairs section's lag rule: a pair lags when its median
// (over the rounds) of the headline metric is below LagRatio × the median
// of the other pairs' medians (above 1/LagRatio × for a metric where lower
// is better). A lagging pair means the aggregate hides an unfair share: a
// pair starved by the others, a slower path, a busier CPU.
const LagRatio = 0.8

// pairsSection is run --pairs N: how each test's aggregate splits across
// its pairs. The tables above show the aggregate (the sample's result);
// this section is the spread behind it. Nothing for runs of one pair.
type pairsSection struct{}

// PairsRow is one test on one placement and scenario run with pairs.
type PairsRow struct {
	Run       string  `json:"run,omitempty"` // its label when several runs are compared
	Scenario  string  `json:"scenario"`
	Test      string  `json:"test"`
	Placement string  `json:"placement"`
	Metric    string  `json:"metric"` // the kind's headline
	Unit      string  `json:"unit"`
	Better    string  `json:"better"`
	Pairs     int     `json:"pairs"`
	Aggregate float64 `json:"aggregate"` // median over the rounds of the sample's aggregate
	// PairMedians is each pair's median over the rounds; Min, Median and
	// Max are over them.
	PairMedians []float64 `json:"pair_medians"`
	Min         float64   `json:"min"`
	Median      float64   `json:"median"`
	Max         float64   `json:"max"`
	// RoundMedians is each round's median pair (a round without a
	// successful sample is left out).
	RoundMedians []float64 `json:"round_medians"`
	// Lagging are the pairs that lag (LagRatio).
	Lagging []int `json:"lagging,omitempty"`
}

func (pairsSection) stage() buildStage { return beforeControl }

func (pairsSection) build(rep *Report, in []Input) error {
	var rows []PairsRow
	for _, input := range in {
		for _, res := range input.Run.Results {
			if row, ok := pairsRow(res); ok {
				if len(in) > 1 {
					row.Run = input.Label
				}
				rows = append(rows, row)
			}
		}
	}
	if len(rows) > 0 { // a report of one pair keeps its report.json as it was
		rep.setExtra("pairs", rows)
	}
	return nil
}

// pairsRow is a Result's spread across its pairs; ok is false for a
// Result of one pair or without a successful sample.
func pairsRow(res results.Result) (PairsRow, bool) {
	row := PairsRow{Scenario: res.Scenario, Test: res.Test, Placement: res.Placement.Name(), Pairs: len(res.Pairs)}
	if len(res.Pairs) < 2 {
		return row, false
	}
	perPair := make([][]float64, len(res.Pairs))
	var agg []float64
	for _, s := range res.Samples {
		v, ok := headline(res.Test, s.Result, &row)
		if s.Error != "" || !ok || len(s.Pairs) != len(res.Pairs) {
			continue
		}
		agg = append(agg, v)
		var round []float64
		for i, p := range s.Pairs {
			pv, _ := headline(res.Test, p.Result, &row)
			perPair[i] = append(perPair[i], pv)
			round = append(round, pv)
		}
		row.RoundMedians = append(row.RoundMedians, stats.Quantile(round, 0.5))
	}
	if len(agg) == 0 {
		return row, false
	}
	row.Aggregate = stats.Quantile(agg, 0.5)
	for _, vs := range perPair {
		row.PairMedians = append(row.PairMedians, stats.Quantile(vs, 0.5))
	}
	row.Min, row.Max = slices.Min(row.PairMedians), slices.Max(row.PairMedians)
	row.Median = stats.Quantile(row.PairMedians, 0.5)
	row.Lagging = lagging(row.PairMedians, row.Better == string(kinds.LowerIsBetter))
	return row, true
}

// headline reads a result's headline metric, naming it in row.
func headline(test string, result any, row *PairsRow) (float64, bool) {
	k, ok := kinds.Of(result)
	if !ok {
		return math.NaN(), false
	}
	for _, v := range k.Read(test, result).Values {
		if v.Headline {
			row.Metric, row.Unit, row.Better = v.Name, v.Unit, string(v.Better)
			return v.V, true
		}
	}
	return math.NaN(), false
}

// lagging are the pairs whose median is below LagRatio × the median of
// the others' (above it divided by LagRatio when lower is better).
func lagging(medians []float64, lowerIsBetter bool) []int {
	var out []int
	for i, m := range medians {
		others := stats.Quantile(slices.Delete(slices.Clone(medians), i, i+1), 0.5)
		if (!lowerIsBetter && m < LagRatio*others) || (lowerIsBetter && m > others/LagRatio) {
			out = append(out, i)
		}
	}
	return out
}

// pairsRows is the section's model (nil without pairs).
func pairsRows(rep *Report) []PairsRow {
	rows, _ := rep.Extra["pairs"].([]PairsRow)
	return rows
}

// pairsAbout is the section's first paragraph.
const pairsAbout = "Each sample ran its pairs' clients at once (docs/pairs.md); the tables above show their aggregate, this is how it splits across the pairs: the median over the rounds of each pair's headline metric, the lowest, median and highest pair, and each round's median pair. A pair lags when its median is below 0.8× the median of the other pairs' (above 1.25× where lower is better)."

func (pairsSection) markdown(b *strings.Builder, rep *Report) {
	rows := pairsRows(rep)
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(b, "## Pairs\n\n%s\n\n", pairsAbout)
	mdRow(b, "Scenario", "Test", "Placement", "Metric", "Pairs", "Aggregate", "Min pair", "Median pair", "Max pair", "Per-round median pair", "Lagging")
	b.WriteString("|---|---|---|---|---:|---:|---:|---:|---:|---|---|\n")
	for _, r := range rows {
		sc := r.Scenario
		if r.Run != "" {
			sc = r.Run + "/" + sc
		}
		mdRow(b, sc, r.Test, r.Placement, r.Metric+" ("+r.Unit+")", fmt.Sprint(r.Pairs), fmtNum(r.Aggregate),
			fmtNum(r.Min), fmtNum(r.Median), fmtNum(r.Max), joinNums(r.RoundMedians), r.LagText())
	}
	b.WriteString("\n") // sections are apart by a blank line
}

// pairsHTML is sectionTmpl's, with the report's number format.
var pairsHTML = template.Must(template.New("pairs").Funcs(template.FuncMap{"num": fmtNum, "nums": joinNums}).Parse(`<h2 id="pairs">Pairs</h2>
<p>{{.About}}</p>
<table><thead><tr><th>Scenario</th><th>Test</th><th>Placement</th><th>Metric</th><th>Pairs</th><th>Aggregate</th><th>Min pair</th><th>Median pair</th><th>Max pair</th><th>Per-round median pair</th><th>Lagging</th></tr></thead><tbody>
{{range .Rows}}<tr><td>{{if .Run}}{{.Run}}/{{end}}{{.Scenario}}</td><td>{{.Test}}</td><td>{{.Placement}}</td><td>{{.Metric}} ({{.Unit}})</td><td class="num">{{.Pairs}}</td><td class="num">{{num .Aggregate}}</td><td class="num">{{num .Min}}</td><td class="num">{{num .Median}}</td><td class="num">{{num .Max}}</td><td>{{nums .RoundMedians}}</td><td>{{.LagText}}</td></tr>
{{end}}</tbody></table>
`))

func (pairsSection) html(b *strings.Builder, rep *Report) error {
	rows := pairsRows(rep)
	if len(rows) == 0 {
		return nil
	}
	return pairsHTML.Execute(b, struct {
		About string
		Rows  []PairsRow
	}{pairsAbout, rows})
}

// LagText names the lagging pairs with their medians ("" for none).
func (r PairsRow) LagText() string {
	var parts []string
	for _, i := range r.Lagging {
		parts = append(parts, fmt.Sprintf("pair %d (%s)", i, fmtNum(r.PairMedians[i])))
	}
	return strings.Join(parts, ", ")
}

// joinNums is values as the report prints them, "a / b / c".
func joinNums(vs []float64) string {
	var parts []string
	for _, v := range vs {
		parts = append(parts, fmtNum(v))
	}
	return strings.Join(parts, " / ")
}
