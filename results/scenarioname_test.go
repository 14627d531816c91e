package results

import (
	"slices"
	"strings"
	"testing"
)

// A name is parsed once into lower-case, trimmed parts; an empty name or
// part is refused naming it; a file without recorded parts has them read
// from its name.
func TestParseScenarioName(t *testing.T) {
	n, err := ParseScenarioName(" VXLAN+ebpf + Policy ")
	if err != nil || !slices.Equal(n, ScenarioName{"vxlan", "ebpf", "policy"}) || n.String() != "vxlan+ebpf+policy" {
		t.Fatalf("parsed %q (%v)", n, err)
	}
	if !n.Has("ebpf") || n.Has("vxlan+ebpf") || !n.Covers(ScenarioName{"policy", "vxlan"}) || n.Covers(ScenarioName{"flows"}) {
		t.Error("Has / Covers")
	}
	if got := n.Without(func(p string) bool { return p == "ebpf" }).String(); got != "vxlan+policy" || n.String() != "vxlan+ebpf+policy" {
		t.Errorf("Without: %q, and n became %q", got, n)
	}
	if got := n.With("flows").String(); got != "vxlan+ebpf+policy+flows" || n.With("ebpf").String() != n.String() {
		t.Errorf("With: %q", got)
	}
	for _, bad := range []string{"", "  ", "a++b", "+a", "a+"} {
		if _, err := ParseScenarioName(bad); err == nil || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: %v, want a one-line error", bad, err)
		}
	}
	if got := (Scenario{Name: "iptables+Policy"}).ScenarioName(); !slices.Equal(got, ScenarioName{"iptables", "policy"}) {
		t.Errorf("an older file's scenario: %q", got)
	}
	if got := (Scenario{Name: "x+y", Parts: ScenarioName{"x", "y", "z"}}).ScenarioName(); len(got) != 3 {
		t.Errorf("recorded parts not used: %q", got)
	}
}
