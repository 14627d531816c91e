package report

import (
	"strings"
	"testing"

	"github.com/cnibench/cnibench/results"
)

// The policy line carries the enforcer, what the kernel held, every probe
// and the kernel's drop count; a scenario without policy has none.
func TestPolicyText(t *testing.T) {
	d := map[string]any{"policy": map[string]any{
		"enforcer": "iptables", "program_ns": float64(12e6), "drops": float64(6),
		"counts": map[string]any{"pods": float64(3), "rules": float64(3), "peers": float64(4)},
		"probes": []any{
			map[string]any{"from": "node0-pod0", "to": "node1-pod0 198.19.1.10:40000", "want": "connect", "got": "connected"},
			map[string]any{"from": "node1-pod1", "to": "node1-pod0 198.19.1.10:40001", "want": "drop", "got": "dropped (no answer in 500ms)"},
		},
		"skipped": []any{"egress: every pod but the clients is a server"},
	}}
	got := legacyText(results.PolicyLabel, d)
	for _, want := range []string{"iptables: 3 pods, 3 rules, 4 peers", "programmed in 12ms", "node0-pod0 → node1-pod0 connected",
		"node1-pod1 → node1-pod0 dropped (no answer in 500ms)", "6 packets dropped", "not probed: egress"} {
		if !strings.Contains(got, want) {
			t.Errorf("policy line %q lacks %q", got, want)
		}
	}
	if s := legacyText(results.PolicyLabel, map[string]any{"lab": "x"}); s != "" {
		t.Errorf("no policy gave %q", s)
	}
	if _, ok := flatten(d)["policy.enforcer"]; ok {
		t.Error("the policy check is flattened into the details as well as its own line")
	}
}

// The L7 line names the model, the proxies, the allow-list and the checks.
func TestL7Text(t *testing.T) {
	d := map[string]any{"l7": map[string]any{"model": "sidecar", "proxies": []any{"client-node0-pod0", "server-node1-pod0"},
		"rules": []any{map[string]any{"method": "GET", "path": "/"}}, "start_ns": float64(3e8),
		"checks": []any{"198.19.1.10:8080: GET / 200 through server-node1-pod0, client-node0-pod0; GET /cnb-l7-denied 403 from server-node1-pod0"}}}
	got := legacyText(results.L7Label, d)
	for _, want := range []string{"sidecar HAProxy (client-node0-pod0, server-node1-pod0)", "allowing only GET /", "in 300ms", "403 from server-node1-pod0"} {
		if !strings.Contains(got, want) {
			t.Errorf("L7 line %q lacks %q", got, want)
		}
	}
	if legacyText(results.L7Label, map[string]any{}) != "" {
		t.Error("an L7 line without L7")
	}
}

// The flows line says the mechanism and what the probes produced.
func TestFlowsText(t *testing.T) {
	got := legacyText(results.FlowsLabel, map[string]any{"flows": map[string]any{"mechanism": "nflog", "installed": float64(4), "probes": float64(3), "events": float64(9), "syn_events": float64(3)}})
	for _, want := range []string{"nflog events (4 hooks", "3 probe connections gave 9 events, 3 of them SYN"} {
		if !strings.Contains(got, want) {
			t.Errorf("flows line %q lacks %q", got, want)
		}
	}
	if legacyText(results.FlowsLabel, map[string]any{}) != "" {
		t.Error("a flows line with flows off")
	}
}

// legacyText is the check line of label that an older results file's
// details give (checkLines through legacyChecks), "" when none.
func legacyText(label string, details map[string]any) string {
	for _, l := range checkLines(results.Scenario{Target: results.Target{Details: details}}) {
		if l.Label == label {
			return l.Text
		}
	}
	return ""
}
