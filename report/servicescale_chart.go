package report

import (
	"fmt"
	"math"
	"strings"
)

// lineChart is an SVG line chart of a quantity against the Service count,
// one line per datapath.
type lineChart struct {
	Title  string
	W, H   int
	Grid   []line
	Series []lineSeries
	Texts  []text
}

type lineSeries struct {
	Name, Colour, Points string
	Dots                 []dot
	NoLine               bool // dots only (events, not a curve)
}

// xAxis is a line chart's x axis: from 0 to Max, ticks labelled by Tick.
type xAxis struct {
	Max   float64
	Label string
	Tick  func(float64) string
}

type dot struct {
	X, Y        int
	Colour, Tip string
}

const (
	lcW, lcH        = 420, 240
	lcLeft, lcRight = 56, 24
	lcTop, lcBottom = 10, 34
	lcLogRange      = 100.0 // use a log axis when max/min exceeds this
	shortRPSTrack   = "short-connection RPS"
)

// charts draws short-connection RPS and programming time against Services.
func (ss *ServiceScale) charts() []lineChart {
	var rps, prog [][2][]float64
	var names []string
	for _, d := range ss.Datapaths {
		x, y := d.track(shortRPSTrack)
		rps = append(rps, [2][]float64{x, y})
		var px, py []float64
		for _, s := range d.Steps {
			if s.Services > 0 && s.ProgramMs > 0 {
				px, py = append(px, float64(s.Services)), append(py, float64(s.ProgramMs))
			}
		}
		prog = append(prog, [2][]float64{px, py})
		names = append(names, d.Scenario)
	}
	return []lineChart{
		drawLines("Short-connection RPS (HTTP_RPS_SHORT_C64, req/s) vs Services", names, rps, false, fmtNum),
		drawLines("Programming time per step (ms) vs Services", names, prog, true, func(v float64) string { return msText(v) }),
	}
}

// drawLines plots the series against Services; logY allows a log axis
// for wide ranges.
func drawLines(title string, names []string, data [][2][]float64, logY bool, label func(float64) string) lineChart {
	return drawLinesOn(xAxis{Label: "Services", Tick: func(x float64) string { return thousands(int(math.Round(x))) }}, title, names, data, logY, label)
}

// drawLinesOn plots the series on axis x (its Max widened to the data's).
func drawLinesOn(x xAxis, title string, names []string, data [][2][]float64, logY bool, label func(float64) string) lineChart {
	c := lineChart{Title: title, W: lcW, H: lcH}
	xmax, ymin, ymax := x.Max, math.Inf(1), 0.0
	for _, d := range data {
		for i := range d[0] {
			xmax = math.Max(xmax, d[0][i])
			if d[1][i] > 0 {
				ymin = math.Min(ymin, d[1][i])
			}
			ymax = math.Max(ymax, d[1][i])
		}
	}
	if xmax == 0 {
		xmax = 1
	}
	log := logY && ymin > 0 && ymax/ymin > lcLogRange
	pw, ph := float64(lcW-lcLeft-lcRight), float64(lcH-lcTop-lcBottom)
	var lo, hi float64
	if log {
		lo, hi = math.Floor(math.Log10(ymin)), math.Ceil(math.Log10(ymax))
	} else {
		lo, hi = 0, niceCeil(ymax)
		if hi == 0 {
			hi = 1
		}
	}
	px := func(x float64) int { return lcLeft + int(math.Round(x/xmax*pw)) }
	py := func(y float64) int {
		f := y / hi
		if log {
			f = (math.Log10(math.Max(y, math.Pow(10, lo))) - lo) / (hi - lo)
		}
		return lcTop + int(math.Round((1-f)*ph))
	}
	// Grid and y labels.
	var ticks []float64
	if log {
		for e := lo; e <= hi; e++ {
			ticks = append(ticks, math.Pow(10, e))
		}
	} else {
		for i := 0; i <= 4; i++ {
			ticks = append(ticks, hi*float64(i)/4)
		}
	}
	for _, t := range ticks {
		y := py(t)
		c.Grid = append(c.Grid, line{lcLeft, y, lcW - lcRight, y, "grid"})
		c.Texts = append(c.Texts, text{lcLeft - 4, y + 4, "end", "tick", label(t)})
	}
	c.Grid = append(c.Grid, line{lcLeft, lcTop, lcLeft, lcH - lcBottom, "axis"}, line{lcLeft, lcH - lcBottom, lcW - lcRight, lcH - lcBottom, "axis"})
	for i := 0; i <= 4; i++ {
		v := xmax * float64(i) / 4
		c.Texts = append(c.Texts, text{px(v), lcH - lcBottom + 14, "middle", "tick", x.Tick(v)})
	}
	c.Texts = append(c.Texts, text{lcLeft + int(pw/2), lcH - 4, "middle", "muted", x.Label})
	if log {
		c.Texts = append(c.Texts, text{lcW - lcRight, lcTop + 10, "end", "muted", "log scale"})
	}
	for i, d := range data {
		s := lineSeries{Name: names[i], Colour: colour(i)}
		var pts []string
		for j := range d[0] {
			cx, cy := px(d[0][j]), py(d[1][j])
			pts = append(pts, fmt.Sprintf("%d,%d", cx, cy))
			s.Dots = append(s.Dots, dot{cx, cy, s.Colour, fmt.Sprintf("%s: %s at %s %s", names[i], label(d[1][j]), x.Tick(d[0][j]), x.Label)})
		}
		s.Points = strings.Join(pts, " ")
		c.Series = append(c.Series, s)
	}
	return c
}
