package report

import (
	"math"
	"slices"
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

// barTop is the axis end a bar chart of row needs: its largest displayed
// value or interval end.
func barTop(row Row) float64 {
	top := 0.0
	for _, v := range row.Values {
		if v != nil {
			top = math.Max(top, math.Max(float64(v.Display), float64(v.Hi)))
		}
	}
	return top
}

// barChart draws one bar per column for a higher-is-better row: the
// displayed median, with its confidence interval as a whisker, on a linear
// axis from zero to top (shared by every chart of the same metric, so
// bars compare across charts too), each bar labelled with its value.
func barChart(title string, row Row, cols []Column, top float64) chart {
	n := len(cols)
	c := chart{Kind: "bar", Title: title, Width: chartWidth, Height: topPad + n*(barH+barGap) + axisPad}
	plotW := chartWidth - labelW - valueW
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

// latencyRange is the smallest and largest displayed percentile of a
// section (0, 0 without latency).
func latencyRange(sec Section) (lo, hi float64) {
	lo = math.Inf(1)
	for _, r := range sec.Metrics {
		if !slices.Contains(latencyChartRows, r.Metric) {
			continue
		}
		for _, v := range r.Values {
			if v != nil && v.Display > 0 {
				lo, hi = math.Min(lo, float64(v.Display)), math.Max(hi, float64(v.Display))
			}
		}
	}
	if hi == 0 {
		return 0, 0
	}
	return lo, hi
}

// latencyAxis is the one value axis every latency chart of a report
// shares, so a bar's height means the same in every panel: linear from
// zero while the values span at most 20×, else logarithmic from the decade
// below the lowest, gridlines labelled at 1, 2 and 5 times each power of
// ten (p99.9 is often 10× p50; across placements, 100×).
type latencyAxis struct {
	log    bool
	lo, hi float64 // linear: 0..hi; log: decades lo..hi (log10)
}

func newLatencyAxis(lo, hi float64) latencyAxis {
	if hi/lo <= 20 {
		return latencyAxis{lo: 0, hi: niceCeil(hi)}
	}
	return latencyAxis{log: true, lo: math.Floor(math.Log10(lo)), hi: math.Log10(hi) + 0.08}
}

// frac places v on the axis, 0 at the bottom, 1 at the top.
func (a latencyAxis) frac(v float64) float64 {
	if a.log {
		return (math.Log10(v) - a.lo) / (a.hi - a.lo)
	}
	return v / a.hi
}

// ticks are the labelled gridline values.
func (a latencyAxis) ticks() []float64 {
	var out []float64
	if !a.log {
		for i := 0; i <= 4; i++ {
			out = append(out, a.hi*float64(i)/4)
		}
		return out
	}
	for d := a.lo; d <= a.hi; d++ {
		for _, m := range []float64{1, 2, 5} {
			v := m * math.Pow(10, d)
			if math.Log10(v) > a.hi {
				break
			}
			out = append(out, v)
		}
	}
	return out
}

// latencyChart draws the percentiles (median over rounds of each round's)
// per column on the report's shared axis, each with its confidence
// interval as a whisker: bars from zero on a linear axis, and on a log
// axis markers (a bar's length from an arbitrary decade would misstate
// how much larger one latency is). A value is written above its mark only
// where its column is wide enough for the text; every mark has its value
// as a tooltip. It returns false when no column has latency.
func latencyChart(title string, sec Section, cols []Column, axis latencyAxis) (chart, bool) {
	byName := map[string]Row{}
	for _, r := range sec.Metrics {
		byName[r.Metric] = r
	}
	if _, hi := latencyRange(sec); hi == 0 {
		return chart{}, false
	}
	const left, right, top, bottom, height = 56, 8, 20, 22, 212
	c := chart{Kind: "latency", Title: title, Width: chartWidth, Height: height}
	plotH := height - top - bottom
	y := func(v float64) int {
		return top + plotH - int(math.Round(math.Max(0, math.Min(axis.frac(v), 1))*float64(plotH)))
	}
	for _, v := range axis.ticks() {
		yy := y(math.Max(v, 1e-9))
		c.Lines = append(c.Lines, line{left, yy, chartWidth - right, yy, "grid"})
		c.Texts = append(c.Texts, text{X: left - 4, Y: yy + 4, Anchor: "end", Class: "tick", S: usText(v)})
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
			val := row.Values[i]
			v := float64(val.Display)
			yv, cx := y(v), gx+i*bw+bw/2
			tip := col.Label + " " + name + ": " + fmtNum(v) + " µs"
			if axis.log {
				m := min(bw-1, 8)
				c.Rects = append(c.Rects, rect{X: cx - m/2, Y: yv - 3, W: m, H: 6, Fill: colour(i), Tip: tip})
			} else {
				c.Rects = append(c.Rects, rect{X: gx + i*bw, Y: yv, W: bw - 1, H: top + plotH - yv, Fill: colour(i), Tip: tip})
			}
			if lo, hi := float64(val.Lo), float64(val.Hi); val.N > 1 && lo > 0 && hi > lo {
				c.Lines = append(c.Lines, line{cx, y(lo), cx, y(hi), "whisker"},
					line{cx - 2, y(lo), cx + 2, y(lo), "whisker"}, line{cx - 2, y(hi), cx + 2, y(hi), "whisker"})
			}
			if label := fmtNum(v); labelFits(label, bw) {
				top := yv - 5
				if hi := float64(val.Hi); val.N > 1 && hi > v {
					top = min(top, y(hi)-3)
				}
				c.Texts = append(c.Texts, text{X: cx, Y: max(top, 10), Anchor: "middle", Class: "val", S: label})
			}
		}
		c.Texts = append(c.Texts, text{X: left + g*groupW + groupW/2, Y: height - 6, Anchor: "middle", Class: "tick",
			S: name[:len(name)-len(" latency")]})
	}
	c.Lines = append(c.Lines, line{left, top + plotH, chartWidth - right, top + plotH, "axis"})
	return c, true
}

// labelFits says whether a value label fits over a column bw pixels wide
// (11 px text: about 6.5 px a character), so neighbours never overlap.
func labelFits(label string, bw int) bool {
	return float64(len([]rune(label)))*6.5+2 <= float64(bw)
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
	// One scale per group of comparable bars: every chart of one metric
	// and unit (all "rate (trans/s)" charts) ends at the same value, and
	// every latency chart shares one axis.
	tops := map[string]float64{}
	lo, hi := math.Inf(1), 0.0
	for _, sec := range rep.Sections {
		for _, r := range sec.Metrics {
			if r.Headline && r.Better == string(results.HigherIsBetter) {
				tops[r.Metric+"\x00"+r.Unit] = math.Max(tops[r.Metric+"\x00"+r.Unit], barTop(r))
			}
		}
		if l, h := latencyRange(sec); h > 0 {
			lo, hi = math.Min(lo, l), math.Max(hi, h)
		}
	}
	var axis latencyAxis
	scale := ""
	if hi > 0 {
		axis = newLatencyAxis(lo, hi)
		scale = "linear scale shared by every latency chart"
		if axis.log {
			scale = "log scale shared by every latency chart"
		}
	}
	var bars, lats []chart
	for _, sec := range rep.Sections {
		where := sec.Test + " · " + sec.Placement
		for _, r := range sec.Metrics {
			if r.Headline && r.Better == string(results.HigherIsBetter) {
				bars = append(bars, barChart(where+": "+r.Metric+" ("+r.Unit+")", r, rep.Columns, tops[r.Metric+"\x00"+r.Unit]))
			}
		}
		if c, ok := latencyChart(where+": latency percentiles, µs ("+scale+")", sec, rep.Columns, axis); ok {
			lats = append(lats, c)
		}
	}
	// Bars first, then latency: charts of one height share rows.
	return append(bars, lats...)
}
