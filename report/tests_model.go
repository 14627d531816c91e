package report

import (
	"fmt"
	"strings"

	"github.com/cnibench/cnibench/engine/engineapi"
	"github.com/cnibench/cnibench/engine/kinds"
	"github.com/cnibench/cnibench/results"
)

// A test section of the report: one (test, placement) with its samples,
// metric rows and warnings in every column.

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
			Streams: flows(r), ClientSaturated: s.ClientSaturated, MissedTarget: s.MissedTarget,
			PortExhausted: s.PortExhausted, Stalled: s.Stalled}
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

// flows are an engine test's parallel flows (0 for other kinds, whose
// connections or queries in flight are settings of the test, not N).
func flows(r results.Result) int {
	if o, ok := r.Options.(*engineapi.Options); ok {
		return o.Streams
	}
	return 0
}

// unpacedUDP explains a UDP_STREAM's loss when its sender was not paced:
// it offers as fast as it can (iperf3 -u -b 0), so the loss is the
// receiver's socket overflowing, not the datapath dropping.
func unpacedUDP(r results.Result, s *results.Series) string {
	o, ok := r.Options.(*engineapi.Options)
	if !ok || o.Test != engineapi.UDPStream || o.RateBitsPerSec > 0 {
		return ""
	}
	m := s.Metric(results.MetricLoss)
	if m == nil || m.Display < 5 {
		return ""
	}
	return fmt.Sprintf("%.1f%% UDP loss with an unpaced sender (it offers as fast as it can, as iperf3 -u -b 0): the receiver's socket overflows; "+
		"that is not the datapath dropping, so judge the delivered throughput, or pace the sender (cnibench client UDP_STREAM --rate)", m.Display)
}
