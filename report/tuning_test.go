package report

import (
	"strings"
	"testing"
)

// The tuning line gives each tuning's outcome and what was read back, and
// says nothing was measured under one that did not apply; the scenario
// shows it in Markdown and HTML, and it is not flattened into the details.
func TestTuningText(t *testing.T) {
	d := map[string]any{"tuning": []any{
		map[string]any{"name": "cc-reno", "status": "applied", "detail": "read back: reno in 6 namespaces", "sites": float64(6)},
		map[string]any{"name": "busy-poll", "status": "not applicable", "detail": "host-wide sysctls", "sites": float64(0)},
	}}
	got := tuningText(d)
	for _, want := range []string{"cc-reno applied (read back: reno in 6 namespaces)", "busy-poll not applicable (host-wide sysctls): nothing measured under it"} {
		if !strings.Contains(got, want) {
			t.Errorf("tuning line %q lacks %q", got, want)
		}
	}
	if strings.Contains(strings.Split(got, ";")[0], "nothing measured") {
		t.Errorf("an applied tuning is said unmeasured: %q", got)
	}
	if tuningText(map[string]any{"lab": "x"}) != "" {
		t.Error("a tuning line without tunings")
	}
	if _, ok := flatten(d)["tuning"]; ok {
		t.Error("the tuning checks are flattened into the details as well as their own line")
	}

	run := loadFixture(t)
	if len(run.Scenarios) == 0 {
		t.Fatal("the fixture has no scenarios")
	}
	if run.Scenarios[0].Target.Details == nil {
		run.Scenarios[0].Target.Details = map[string]any{}
	}
	run.Scenarios[0].Target.Details["tuning"] = d["tuning"]
	rep, err := Build([]Input{{Run: run}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for name, out := range renderMDHTML(t, rep) {
		if !strings.Contains(out, "Tuning, read back from the kernel before measuring") || !strings.Contains(out, "reno in 6 namespaces") {
			t.Errorf("%s lacks the tuning line", name)
		}
	}
}
