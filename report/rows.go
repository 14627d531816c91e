package report

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/cnibench/cnibench/results"
	"github.com/cnibench/cnibench/stats"
)

// A metric across the columns: its values, on the rounds the columns of
// a run share, and its verdicts.

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
