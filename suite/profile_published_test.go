package suite

import (
	"context"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/published"
	"github.com/cnibench/cnibench/report"
	"github.com/cnibench/cnibench/results"
)

// Every profile resolves on the lab with its own defaults.
func TestEveryProfileResolves(t *testing.T) {
	for _, name := range ProfileNames() {
		p, err := Options{Profile: name}.Resolve()
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if p.SamplesOn([]string{""}) == 0 {
			t.Errorf("%s: resolves to no sample", name)
		}
	}
}

// A profile named after a published report maps every figure the report
// printed onto one of its own tests, placements and scenarios, or says
// why it cannot; its shapes join two mapped cells.
func TestPublishedProfilesMapTheirReport(t *testing.T) {
	for _, name := range []string{"connectivity-perf", "cilium-2021", "tke", "eks", "istio-scale"} {
		prof, err := LookupProfile(name)
		if err != nil {
			t.Fatal(err)
		}
		plan, err := Options{Profile: name}.Resolve()
		if err != nil {
			t.Fatal(err)
		}
		rp := plan.Reproduces
		if rp == nil || rp.Report != name {
			t.Fatalf("%s: plan reproduces %+v, want the report named after the profile", name, rp)
		}
		pub, err := published.Lookup(rp.Report)
		if err != nil {
			t.Fatal(err)
		}
		mapped := map[[2]string]bool{}
		for _, c := range rp.Cells {
			where := name + " " + c.Row + " / " + c.Column
			if !pub.HasRow(c.Row) || !pub.HasColumn(c.Column) {
				t.Errorf("%s: not a cell of the published table", where)
			}
			mapped[[2]string{c.Row, c.Column}] = true
			if c.NoEquivalent != "" {
				continue
			}
			if c.Services > 0 && (prof.Scale == nil || !slices.Contains(prof.Scale.Steps, c.Services) || !slices.Contains(prof.Scale.Scenarios, c.Scenario)) {
				t.Errorf("%s: at %d Services, not a step of the profile's rows at scale %+v", where, c.Services, prof.Scale)
			}
			if c.Metric == results.MetricMapMemory {
				continue // read from the sweep's step, not a test
			}
			if !slices.Contains(plan.Tests, c.Test) || !slices.Contains(plan.Placements, c.Placement) || c.Metric == "" {
				t.Errorf("%s: %s on %s (%q) is not in the profile's plan", where, c.Test, c.Placement, c.Metric)
			}
			if (len(prof.Scenarios) == 0) != (c.Scenario == "") || (c.Scenario != "" && !slices.Contains(prof.Scenarios, c.Scenario)) {
				t.Errorf("%s: scenario %q is not one of the profile's %v", where, c.Scenario, prof.Scenarios)
			}
		}
		for _, c := range pub.Cells {
			if !mapped[[2]string{c.Row, c.Column}] {
				t.Errorf("%s: the published %s / %s is neither mapped nor said to have no equivalent", name, c.Row, c.Column)
			}
		}
		if len(rp.Shapes) == 0 {
			t.Errorf("%s: no shape", name)
		}
		for _, s := range rp.Shapes {
			for _, ref := range []struct{ row, col string }{{s.A.Row, s.A.Column}, {s.B.Row, s.B.Column}} {
				if _, ok := pub.Cell(ref.row, ref.col); !ok {
					t.Errorf("%s: shape %q: no published figure at %s / %s", name, s.Ask, ref.row, ref.col)
				}
			}
		}
	}
}

// TKE's shapes between scenarios without dummy Services are the
// profile's questions; those at scale are judged in the report only.
func TestTKEShapesAreQuestions(t *testing.T) {
	prof, _ := LookupProfile("tke")
	atScale := 0
	for _, s := range prof.Reproduces.Shapes {
		if strings.Contains(s.A.Row+s.B.Row, "Service scale") {
			atScale++
		}
	}
	if atScale != 5 || len(prof.Questions) != len(prof.Reproduces.Shapes)-atScale {
		t.Fatalf("%d questions for %d shapes, %d of them at scale (want 5)", len(prof.Questions), len(prof.Reproduces.Shapes), atScale)
	}
	q := prof.Questions[0]
	if q.Test != "FORTIO_RPS_SHORT_C64" || q.Placement != PodToServiceOtherNode || q.A != "iptables-legacy" || q.B != "ebpf" || q.Metric != "request rate" {
		t.Errorf("first question %+v, want short-connection HTTP, ebpf vs iptables", q)
	}
	// An overhead shape asks for the part's scenario against its column's
	// datapath, on the one test that scenario runs.
	var parts []string
	for _, q := range prof.Questions {
		if only, narrowed := prof.ScenarioTests[q.B]; narrowed {
			parts = append(parts, q.B+" vs "+q.A)
			if q.Test != "FORTIO_RPS_C64" || q.Placement != PodToServiceOtherNode || q.Metric != "request rate" || !slices.Contains(only, q.Test) {
				t.Errorf("overhead question %+v: not keep-alive HTTP through a Service, or not a test its scenario runs", q)
			}
		}
	}
	want := "ebpf+policy vs ebpf, vxlan+ebpf+policy vs vxlan+ebpf, ebpf+l7-node vs ebpf, vxlan+ebpf+l7-node vs vxlan+ebpf, ebpf+flows vs ebpf, vxlan+ebpf+flows vs vxlan+ebpf"
	if strings.Join(parts, ", ") != want {
		t.Errorf("overhead questions %q, want %q", strings.Join(parts, ", "), want)
	}
}

// A connectivity-perf run, cut to two tests on one placement, through the
// real runner and engines on a loopback agent: results.json records the
// profile's reproduction, and its report opens with cilium connectivity
// perf's table and judges the shape on what was measured.
func TestConnectivityPerfRunReproduces(t *testing.T) {
	c := startAgent(t)
	var calls []string
	plan, err := Options{Profile: "connectivity-perf", Tests: []string{"TCP_RR", "TCP_CRR"}, Placements: []string{PodToPodSameNode},
		Duration: 150 * time.Millisecond}.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	plan.Warmup = 0
	out := t.TempDir()
	r := &Runner{Scenarios: []Scenario{{Name: "loop", Target: loopTarget{c, &calls, "loop"}}}, Plan: plan, OutDir: out, RunID: "test"}
	if _, err := r.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	disk, err := results.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	if rp := disk.Plan.Reproduces; rp == nil || rp.Report != "connectivity-perf" || len(rp.Cells) == 0 {
		t.Fatalf("results.json reproduces %+v", rp)
	}
	rep, err := report.Build([]report.Input{{Run: disk}}, report.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var md strings.Builder
	if err := report.Markdown(&md, rep); err != nil {
		t.Fatal(err)
	}
	page := md.String()
	if !strings.Contains(page, "## Reproduced: cilium connectivity perf") ||
		!regexp.MustCompile(`\| pod-to-pod same-node TCP_RR \| P50 \| TCP_RR · pod-to-pod/same-node · the run's scenario · p50 latency \| 46 µs \| [0-9.,]+ `).MatchString(page) {
		t.Fatalf("report.md does not open with the measured table:\n%s", page)
	}
	if !strings.Contains(page, "not measured in this run: UDP_RR on pod-to-pod/same-node was not in the plan") {
		t.Error("a test the run left out does not say so")
	}
	if !regexp.MustCompile(`- TCP_CRR ÷ TCP_RR transaction rate, pod-to-pod same-node: published 0.325× .* here .* → (holds|does not hold|not shown)`).MatchString(page) {
		t.Errorf("the shape is not judged on 5 measured rounds:\n%s", page)
	}
}

// The EKS report's bands (one range printed over its five columns) are
// read from the data file: the tolerance is the range's width, the ask
// quotes it; a row without a range keeps one round's ±5%.
func TestEKSBandsFromTheDataFile(t *testing.T) {
	want := map[string]float64{
		"HTTP p99 at 1,000 QPS, E ÷ A, within the published band (8.75–10.92 ms: ±25%)": 25,
		"HTTP max QPS, E ÷ A, within the published band (≈ 4,000–4,200 req/s: ±5%)":     5,
	}
	found := 0
	for _, s := range eksShapes() {
		if w, ok := want[s.Ask]; ok {
			found++
			if s.EvenWithinPct != w {
				t.Errorf("%s: ±%g%%, want ±%g%%", s.Ask, s.EvenWithinPct, w)
			}
		}
	}
	if found != len(want) {
		t.Errorf("%d of the %d band shapes found: %+v", found, len(want), eksShapes())
	}
	if s := bandShape("eks", "UDP loss", "UDP loss (iperf3)", eksColumns[0].column, eksColumns[4].column); s.EvenWithinPct != evenWithinPct || s.Ask != "UDP loss" {
		t.Errorf("a row without a range: %+v", s)
	}
}
