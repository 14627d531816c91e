package report

import (
	"strings"
	"testing"
)

// Comparable bars share one scale: every bar chart of one metric ends its
// axis at the same value, and every latency chart has the same gridlines,
// so a bar's length means the same in every panel; bars carry their values.
func TestChartsShareScales(t *testing.T) {
	rep := buildFixture(t)
	axisEnd := map[string]string{} // metric (unit) → axis end label
	var latTicks string
	bars, lats := 0, 0
	for _, c := range rep.charts() {
		var ticks, vals []string
		for _, x := range c.Texts {
			switch x.Class {
			case "tick":
				ticks = append(ticks, x.S)
			case "val":
				vals = append(vals, x.S)
			}
		}
		if c.Kind == "bar" && len(vals) != len(c.Rects) {
			t.Errorf("%s: %d bars, %d value labels", c.Title, len(c.Rects), len(vals))
		}
		switch c.Kind {
		case "bar":
			bars++
			metric := c.Title[strings.LastIndex(c.Title, ": ")+2:]
			end := ticks[len(ticks)-1]
			if prev, ok := axisEnd[metric]; ok && prev != end {
				t.Errorf("%s: axis ends at %s, another %s chart at %s", c.Title, end, metric, prev)
			}
			axisEnd[metric] = end
		case "latency":
			lats++
			checkLatencyChart(t, c)
			if got := strings.Join(ticks[:len(ticks)-4], ","); latTicks == "" {
				latTicks = got
			} else if got != latTicks {
				t.Errorf("%s: gridlines %s, another latency chart %s", c.Title, got, latTicks)
			}
		}
	}
	if bars < 4 || lats < 3 || len(axisEnd) >= bars {
		t.Errorf("%d bar charts over %d metrics, %d latency charts: the fixture should give groups to compare", bars, len(axisEnd), lats)
	}
}

// A latency chart on a log axis draws markers, not bars; every mark has
// its value (label or tooltip) and its interval; no two value labels
// overlap.
func checkLatencyChart(t *testing.T, c chart) {
	t.Helper()
	logScale := strings.Contains(c.Title, "log scale")
	whiskers := 0
	for _, l := range c.Lines {
		if l.Class == "whisker" {
			whiskers++
		}
	}
	for _, r := range c.Rects {
		if logScale && r.H > 6 {
			t.Errorf("%s: a bar %d px tall on a log axis", c.Title, r.H)
		}
		if !strings.HasSuffix(r.Tip, " µs") {
			t.Errorf("%s: a mark without its value: %q", c.Title, r.Tip)
		}
	}
	if whiskers < len(c.Rects) {
		t.Errorf("%s: %d whisker lines for %d marks", c.Title, whiskers, len(c.Rects))
	}
	var labels []text
	for _, x := range c.Texts {
		if x.Class == "val" {
			labels = append(labels, x)
		}
	}
	for i, a := range labels {
		for _, b := range labels[i+1:] {
			wa, wb := 3.25*float64(len([]rune(a.S))), 3.25*float64(len([]rune(b.S)))
			if dx := float64(a.X - b.X); dx*dx < (wa+wb)*(wa+wb) && (a.Y-b.Y)*(a.Y-b.Y) < 11*11 {
				t.Errorf("%s: labels %q and %q overlap", c.Title, a.S, b.S)
			}
		}
	}
}
