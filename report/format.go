package report

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cnibench/cnibench/results"
)

// fmtNum prints a measured value with three significant digits or more,
// thousands grouped: 9.41, 84.3, 107, 115,434.
func fmtNum(v float64) string {
	a := math.Abs(v)
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return "–"
	case a == 0:
		return "0"
	case a >= 99.5:
		return group(strconv.FormatFloat(v, 'f', 0, 64))
	case a >= 9.995:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case a >= 1:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
	// Three significant digits below 1: 0.400, 0.0123.
	return strconv.FormatFloat(v, 'f', 2-int(math.Floor(math.Log10(a))), 64)
}

// group inserts thousands separators into an integer string.
func group(s string) string {
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// cellText is a Value as tables show it: "9.41 (9.30–9.52)", "9.41 (n=1)",
// with † when the interval is the sample range below the wanted coverage
// and ‡ when rounds another column lacks were left out (Value.LeftOut).
func cellText(v *Value, level float64) string {
	if v == nil {
		return "missing"
	}
	d := fmtNum(float64(v.Display))
	switch {
	case v.N == 1:
		return d + " (n=1)"
	case v.N == 0:
		return d
	}
	s := fmt.Sprintf("%s (%s–%s)", d, fmtNum(float64(v.Lo)), fmtNum(float64(v.Hi)))
	if float64(v.Coverage) < level {
		s += "†"
	}
	if v.LeftOut != "" {
		s += "‡"
	}
	return s
}

// arrow marks a metric's better direction.
func arrow(better string) string {
	switch better {
	case string(results.HigherIsBetter):
		return " ↑"
	case string(results.LowerIsBetter):
		return " ↓"
	}
	return ""
}

// metricLabel is "throughput (Gbit/s) ↑".
func metricLabel(r Row) string {
	return r.Metric + " (" + r.Unit + ")" + arrow(r.Better)
}

func samplesText(sc *SampleCount) string {
	if sc == nil {
		return "missing"
	}
	if sc.Skipped != "" && sc.OK+sc.Failed == 0 {
		return "skipped (" + sc.Skipped + ")"
	}
	s := fmt.Sprintf("%d ok", sc.OK)
	if sc.Failed > 0 {
		s += fmt.Sprintf(", %d failed", sc.Failed)
	}
	if sc.NotTaken > 0 {
		s += fmt.Sprintf(", %d not taken", sc.NotTaken)
	}
	return s
}

func winnerText(w *Winner) string {
	if w == nil {
		return ""
	}
	return w.Text
}

func shortCommit(c string) string {
	if len(c) > 12 {
		return c[:12]
	}
	return c
}

func toolText(t results.Tool) string {
	s := strings.TrimSpace(t.Name + " " + t.Version)
	var extra []string
	if t.Commit != "" {
		extra = append(extra, "commit "+shortCommit(t.Commit))
	}
	if t.GoVersion != "" {
		extra = append(extra, t.GoVersion)
	}
	if len(extra) > 0 {
		s += " (" + strings.Join(extra, ", ") + ")"
	}
	return s
}

func machineText(e results.Environment) string {
	var parts []string
	if e.CPUModel != "" {
		parts = append(parts, e.CPUModel)
	}
	if e.CPUCount > 0 {
		parts = append(parts, fmt.Sprintf("%d CPUs", e.CPUCount))
	}
	if e.MemoryBytes > 0 {
		parts = append(parts, fmt.Sprintf("%.1f GiB", float64(e.MemoryBytes)/(1<<30)))
	}
	return strings.Join(parts, ", ")
}

func kernelText(e results.Environment) string {
	s := e.Kernel
	if e.OS != "" {
		s += " (" + e.OS + ")"
	}
	return s
}

func statusText(r RunInfo) string {
	s := r.Status
	if r.Error != "" {
		s += ": " + r.Error
	}
	if r.Teardown != "" {
		s += "; teardown failed: " + r.Teardown
	}
	return s
}

func whenText(r RunInfo) string {
	if r.Start.IsZero() {
		return ""
	}
	s := r.Start.UTC().Format(time.RFC3339)
	if !r.End.IsZero() && r.End.After(r.Start) {
		s += ", took " + r.End.Sub(r.Start).Round(time.Second).String()
	}
	return s
}

func detailsText(d map[string]string) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(d)) {
		parts = append(parts, k+"="+d[k])
	}
	return strings.Join(parts, ", ")
}

// squash puts a message on one line with single spaces.
func squash(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
