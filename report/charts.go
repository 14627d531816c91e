package report

import (
	"math"
	"strconv"

	"github.com/cnibench/cnibench/results"
)

// palette colours the columns, in order (Tableau 10: distinct, and legible
// for the common colour-vision deficiencies in its first four).
var palette = []string{"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"}

func colour(i int) string { return palette[i%len(palette)] }

// chart is an SVG chart as plain geometry, rendered by the HTML template.
// Coordinates are whole pixels so that bars render with crisp edges.
type chart struct {
	Kind   string // "bar" or "latency"
	Title  string
	Width  int
	Height int
	Lines  []line // axes and grid, under the bars
	Rects  []rect
	Over   []line // confidence whiskers, over the bars
	Texts  []text
}

type rect struct {
	X, Y, W, H int
	Fill       string
	Tip        string // <title>, shown on hover
}

type line struct {
	X1, Y1, X2, Y2 int
	Class          string
}

type text struct {
	X, Y   int
	Anchor string // start, middle, end
	Class  string
	S      string
}

const (
	chartWidth = 360
	barH       = 18
	barGap     = 8
	labelW     = 96
	valueW     = 64
	topPad     = 8
	axisPad    = 22
)

// barChart draws one bar per column for a higher-is-better row: the
// displayed median, with its confidence interval as a whisker.
func barChart(title string, row Row, cols []Column) chart {
	n := len(cols)
	c := chart{Kind: "bar", Title: title, Width: chartWidth, Height: topPad + n*(barH+barGap) + axisPad}
	plotW := chartWidth - labelW - valueW
	top := 0.0
	for _, v := range row.Values {
		if v != nil {
			top = math.Max(top, math.Max(float64(v.Display), float64(v.Hi)))
		}
	}
	top = niceCeil(top)
	x := func(v float64) int {
		if top <= 0 || v <= 0 {
			return labelW
		}
		return labelW + int(math.Round(math.Min(v/top, 1)*float64(plotW)))
	}
	for i, col := range cols {
		y := topPad + i*(barH+barGap)
		c.Texts = append(c.Texts, text{X: labelW - 6, Y: y + barH/2 + 4, Anchor: "end", Class: "lbl", S: col.Label})
		v := row.Values[i]
		if v == nil {
			c.Texts = append(c.Texts, text{X: labelW + 4, Y: y + barH/2 + 4, Anchor: "start", Class: "muted", S: "missing"})
			continue
		}
		d := float64(v.Display)
		w := x(d) - labelW
		c.Rects = append(c.Rects, rect{X: labelW, Y: y, W: w, H: barH, Fill: colour(i),
			Tip: col.Label + ": " + cellText(v, 0) + " " + row.Unit})
		if v.N > 1 {
			lo, hi, cy := x(float64(v.Lo)), x(float64(v.Hi)), y+barH/2
			c.Over = append(c.Over,
				line{lo, cy, hi, cy, "whisker"},
				line{lo, cy - 5, lo, cy + 5, "whisker"},
				line{hi, cy - 5, hi, cy + 5, "whisker"})
		}
		c.Texts = append(c.Texts, text{X: max(x(d), x(float64(v.Hi))) + 4, Y: y + barH/2 + 4, Anchor: "start", Class: "val", S: fmtNum(d)})
	}
	base := topPad + n*(barH+barGap)
	c.Lines = append(c.Lines, line{labelW, topPad - 2, labelW, base - barGap + 2, "axis"})
	c.Texts = append(c.Texts,
		text{X: labelW, Y: base + 10, Anchor: "middle", Class: "tick", S: "0"},
		text{X: labelW + plotW, Y: base + 10, Anchor: "middle", Class: "tick", S: fmtNum(top) + " " + row.Unit})
	return c
}

// latencyPercentiles are the percentiles the latency chart shows.
var latencyChartRows = []string{results.MetricP50, results.MetricP90, results.MetricP99, results.MetricP999}

// latencyChart draws grouped bars of the merged-histogram percentiles per
// column on a log scale (p99.9 is often 10× p50). It returns false when no
// column has latency.
func latencyChart(title string, sec Section, cols []Column) (chart, bool) {
	byName := map[string]Row{}
	for _, r := range sec.Metrics {
		byName[r.Metric] = r
	}
	lo, hi := math.Inf(1), 0.0
	for _, name := range latencyChartRows {
		for _, v := range byName[name].Values {
			if v != nil && v.Display > 0 {
				lo, hi = math.Min(lo, float64(v.Display)), math.Max(hi, float64(v.Display))
			}
		}
	}
	if hi == 0 {
		return chart{}, false
	}
	const left, right, top, bottom, height = 56, 8, 8, 22, 200
	c := chart{Kind: "latency", Title: title, Width: chartWidth, Height: height}
	// From the decade below the lowest value to a little above the highest,
	// gridlines at 1, 2 and 5 times each power of ten in between.
	dLo, dHi := math.Floor(math.Log10(lo)), math.Log10(hi)+0.08
	plotH := height - top - bottom
	y := func(v float64) int {
		f := (math.Log10(v) - dLo) / (dHi - dLo)
		return top + plotH - int(math.Round(f*float64(plotH)))
	}
	for d := dLo; d <= dHi; d++ {
		for _, m := range []float64{1, 2, 5} {
			v := m * math.Pow(10, d)
			if math.Log10(v) > dHi {
				break
			}
			yy := y(v)
			c.Lines = append(c.Lines, line{left, yy, chartWidth - right, yy, "grid"})
			c.Texts = append(c.Texts, text{X: left - 4, Y: yy + 4, Anchor: "end", Class: "tick", S: usText(v)})
		}
	}
	groupW := (chartWidth - left - right) / len(latencyChartRows)
	bw := max(2, (groupW-12)/len(cols))
	for g, name := range latencyChartRows {
		gx := left + g*groupW + 6
		for i, col := range cols {
			row := byName[name]
			if i >= len(row.Values) || row.Values[i] == nil || row.Values[i].Display <= 0 {
				continue
			}
			v := float64(row.Values[i].Display)
			yv := y(v)
			c.Rects = append(c.Rects, rect{X: gx + i*bw, Y: yv, W: bw - 1, H: top + plotH - yv, Fill: colour(i),
				Tip: col.Label + " " + name + ": " + fmtNum(v) + " µs"})
		}
		c.Texts = append(c.Texts, text{X: left + g*groupW + groupW/2, Y: height - 6, Anchor: "middle", Class: "tick",
			S: name[:len(name)-len(" latency")]})
	}
	c.Lines = append(c.Lines, line{left, top + plotH, chartWidth - right, top + plotH, "axis"})
	return c, true
}

// usText prints a decade of microseconds: 10 µs, 1 ms, 1 s.
func usText(us float64) string {
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	switch {
	case us >= 1e6:
		return f(us/1e6) + " s"
	case us >= 1e3:
		return f(us/1e3) + " ms"
	}
	return f(us) + " µs"
}

// niceCeil rounds up to a round axis end: 1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6
// or 8 times a power of ten, so bars fill most of the axis.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10} {
		if m*p >= v*(1-1e-9) {
			return m * p
		}
	}
	return 10 * p
}

// charts lists every chart of the report: a bar chart for each
// higher-is-better headline (throughput, rate, request rate) of every
// section, then a latency chart for each section that measures latency.
func (rep *Report) charts() []chart {
	var bars, lats []chart
	for _, sec := range rep.Sections {
		where := sec.Test + " · " + sec.Placement
		for _, r := range sec.Metrics {
			if r.Headline && r.Better == string(results.HigherIsBetter) {
				bars = append(bars, barChart(where+": "+r.Metric+" ("+r.Unit+")", r, rep.Columns))
			}
		}
		if c, ok := latencyChart(where+": latency percentiles (merged, log scale)", sec, rep.Columns); ok {
			lats = append(lats, c)
		}
	}
	// Bars first, then latency: charts of one height share rows.
	return append(bars, lats...)
}
