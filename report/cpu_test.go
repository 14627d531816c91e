package report

import (
	"strings"
	"testing"

	"github.com/cnibench/cnibench/results"
)

// A lab run's pinned-CPU readings become a "Where the CPU went" line per
// column in the sections of kinds with CPU per unit of work: the total on
// the agents' CPUs split into client, server and what no endpoint was
// charged for, with the softirq share; in Markdown and HTML. Results
// without them get no line.
func TestWhereTheCPUWent(t *testing.T) {
	run := loadFixture(t)
	for i := range run.Results {
		for j := range run.Results[i].Samples {
			s := &run.Results[i].Samples[j]
			if s.ClientCPUSec > 0 {
				s.Pinned = &results.PinnedCPU{CPUs: "0,1", BusySec: 1.25 * (s.ClientCPUSec + s.ServerCPUSec), SoftirqSec: 0.5 * s.ServerCPUSec}
			}
		}
	}
	rep, err := Build([]Input{{Run: run}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	lines := 0
	for _, sec := range rep.Sections {
		for _, l := range sec.CPU {
			lines++
			if !strings.Contains(l, "on the agents' CPUs = client ") || !strings.Contains(l, "charged to no endpoint") || !strings.Contains(l, "softirq and irq were ") {
				t.Errorf("%s %s: %q", sec.Test, sec.Placement, l)
			}
		}
	}
	if lines == 0 {
		t.Fatal("no section says where the CPU went")
	}
	for name, out := range renderMDHTML(t, rep) {
		if !strings.Contains(out, "Where the CPU went") || !strings.Contains(out, "charged to no endpoint") {
			t.Errorf("%s lacks where the CPU went", name)
		}
	}
	plain, err := Build([]Input{{Run: loadFixture(t)}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, sec := range plain.Sections {
		if len(sec.CPU) > 0 {
			t.Errorf("%s: CPU lines without pinned readings: %q", sec.Test, sec.CPU)
		}
	}
}

// renderMDHTML is rep rendered as Markdown and as HTML, by format name.
func renderMDHTML(t *testing.T, rep *Report) map[string]string {
	t.Helper()
	var md, html strings.Builder
	if err := Markdown(&md, rep); err != nil {
		t.Fatal(err)
	}
	if err := HTML(&html, rep); err != nil {
		t.Fatal(err)
	}
	return map[string]string{"md": md.String(), "html": html.String()}
}
