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
		if len(vals) != len(c.Rects) {
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
