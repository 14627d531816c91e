package report

import (
	"math"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/results"
)

func TestPolicyBase(t *testing.T) {
	for sc, want := range map[string]struct {
		base string
		ok   bool
	}{
		"iptables+policy": {"iptables", true}, "vxlan+ebpf+policy-10k": {"vxlan+ebpf", true},
		"nftables+policy-250": {"nftables", true}, "ebpf": {"ebpf", false},
	} {
		base, ok := policyBase(results.Scenario{Name: sc}.ScenarioName())
		if base != want.base || ok != want.ok {
			t.Errorf("%s: %q %v, want %+v", sc, base, ok, want)
		}
	}
}

// Policy scenarios of one datapath with different rule counts become a
// sweep: steps sorted by rules with what the kernel held and the
// programming time, and a fit per headline metric, in every format.
func TestPolicyScaleSection(t *testing.T) {
	run := loadFixture(t)
	names := map[string]string{run.Scenarios[0].Name: "ebpf+policy-1000", run.Scenarios[1].Name: "ebpf+policy"}
	rules := map[string]float64{"ebpf+policy-1000": 1002, "ebpf+policy": 2}
	scale := map[string]float64{"ebpf+policy-1000": 1000, "ebpf+policy": 0}
	programNs := map[string]float64{"ebpf+policy-1000": 12e6, "ebpf+policy": 5e6}
	for i := range run.Results {
		run.Results[i].Scenario = names[run.Results[i].Scenario]
	}
	for i := range run.Scenarios {
		n := names[run.Scenarios[i].Name]
		run.Scenarios[i].Name = n
		run.Scenarios[i].Target.Details["policy"] = map[string]any{"enforcer": "ebpf", "program_ns": programNs[n], "scale_rules": scale[n],
			"counts": map[string]any{"pods": float64(2), "rules": rules[n], "peers": float64(2)}}
	}
	rep, err := Build([]Input{{Run: run}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ps := rep.PolicyScale
	if ps == nil || len(ps.Datapaths) != 1 {
		t.Fatalf("policy scale %+v", ps)
	}
	d := ps.Datapaths[0]
	if d.Base != "ebpf" || d.Enforcer != "ebpf" || len(d.Steps) != 2 || d.Steps[0].Rules != 0 || d.Steps[1].Rules != 1000 ||
		d.Steps[1].Held != 1002 || d.Steps[1].ProgramMs != 12 {
		t.Errorf("datapath %+v", d)
	}
	if len(d.Fits) == 0 || d.Fits[0].N != 2 {
		t.Errorf("fits %+v", d.Fits)
	}
	// 5 ms with no dummy rules, 12 ms with 1,000: 7 ms per 1,000 rules,
	// 7 µs per rule; two steps are too few for an exponent.
	if p := d.Program; p == nil || math.Abs(float64(p.MsPerThousand)-7) > 1e-9 || math.Abs(float64(p.Intercept)-5) > 1e-9 ||
		math.Abs(float64(p.UsPerRule)-7) > 1e-9 || !math.IsNaN(float64(p.Exponent)) || p.N != 2 {
		t.Errorf("programming-time fit %+v", d.Program)
	}
	for name, out := range renderMDHTML(t, rep) {
		if !strings.Contains(out, "Policy scale") || !strings.Contains(out, "per 1,000 rules per pod") || !strings.Contains(out, "1,000 rules per pod: 1002 held") ||
			!strings.Contains(out, "programming time: +7 ms per 1,000 rules per pod over 5 ms fixed") || !strings.Contains(out, "7 µs per rule at the largest step") {
			t.Errorf("%s lacks the policy-scale section", name)
		}
	}
}

// Four steps of a linear chain (2 ms + 0.03 ms per rule) give exponent 1;
// a step without a programming time is left out of the fit.
func TestPolicyProgramFitGrowth(t *testing.T) {
	var steps []PolicyScaleStep
	for _, n := range []int{0, 10, 100, 1000, 10000} {
		steps = append(steps, PolicyScaleStep{Rules: n, ProgramMs: Num(2 + 0.03*float64(n))})
	}
	steps = append(steps, PolicyScaleStep{Rules: 20000})
	p := policyProgramFit(steps)
	if p == nil || p.N != 5 || math.Abs(float64(p.Exponent)-1) > 0.01 || math.Abs(float64(p.MsPerThousand)-30) > 1e-6 ||
		math.Abs(float64(p.UsPerRule)-30) > 1e-6 {
		t.Fatalf("fit %+v, want exponent 1, 30 ms per 1,000 rules, 30 µs per rule", p)
	}
	if policyProgramFit(steps[:1]) != nil {
		t.Error("one step fitted")
	}
}
