package report

import (
	"strings"
	"testing"

	"github.com/cnibench/cnibench/results"
)

// The tuning line gives each tuning's outcome and what was read back, and
// says nothing was measured under one that did not apply; the scenario
// shows it in Markdown and HTML, and it is not flattened into the details.
func TestTuningText(t *testing.T) {
	d := map[string]any{"tuning": []any{
		map[string]any{"name": "cc-reno", "status": "applied", "detail": "read back: reno in 6 namespaces", "sites": float64(6)},
		map[string]any{"name": "busy-poll", "status": "not applicable", "detail": "host-wide sysctls", "sites": float64(0)},
	}}
	got := legacyText(results.TuningLabel, d)
	for _, want := range []string{"cc-reno applied (read back: reno in 6 namespaces)", "busy-poll not applicable (host-wide sysctls): nothing measured under it"} {
		if !strings.Contains(got, want) {
			t.Errorf("tuning line %q lacks %q", got, want)
		}
	}
	if strings.Contains(strings.Split(got, ";")[0], "nothing measured") {
		t.Errorf("an applied tuning is said unmeasured: %q", got)
	}
	if legacyText(results.TuningLabel, map[string]any{"lab": "x"}) != "" {
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

// The encryption line names the mechanism, the MTU, the kernel's
// WireGuard and the probe that proved it; none without encryption.
func TestEncryptionText(t *testing.T) {
	d := map[string]any{"encryption": map[string]any{"mode": "wireguard", "implementation": "wireguard-go", "kernel_wireguard": "unsupported: WireGuard devices on this kernel (operation not supported)",
		"pod_mtu": float64(1440), "probes": []any{"node0-pod0 → node1-pod0 connected: node0 cnb_wg0 3 packets out (encrypted), 2 in (decrypted), node1 cnb_wg0 2 packets out (encrypted), 3 in (decrypted)"}}}
	got := legacyText(results.EncryptionLabel, d)
	for _, want := range []string{"wireguard by wireguard-go", "pods' MTU 1440", "kernel WireGuard: unsupported", "node1 cnb_wg0 2 packets out"} {
		if !strings.Contains(got, want) {
			t.Errorf("encryption line %q lacks %q", got, want)
		}
	}
	if legacyText(results.EncryptionLabel, map[string]any{}) != "" {
		t.Error("an encryption line without encryption")
	}
	if _, ok := flatten(d)["encryption.mode"]; ok {
		t.Error("the encryption check is flattened into the details as well as its own line")
	}
}
