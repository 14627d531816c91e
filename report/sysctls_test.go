package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/results"
)

// The environment section shows each endpoint's effective sysctls, client
// and server named, endpoints with equal values on one group, in both
// the Markdown and the HTML report.
func TestEffectiveSysctlsInEnvironment(t *testing.T) {
	run := fixtureRun(t)
	pod := map[string]any{"values": map[string]any{"net.ipv4.ip_local_port_range": "1024 65535", "net.ipv4.tcp_tw_reuse": "1"}}
	host := map[string]any{"values": map[string]any{"net.ipv4.ip_local_port_range": "32768 60999", "net.ipv4.tcp_tw_reuse": "2"},
		"unreadable": map[string]any{"net.core.rmem_max": "absent"}}
	for i := range run.Scenarios {
		run.Scenarios[i].Target.Details["endpoint_sysctls"] = map[string]any{"node0-pod0": pod, "node1-pod0": pod, "node0": host}
	}
	run.Results = append(run.Results, results.Result{Test: "TCP_RR", Placement: results.Placement{Client: "node0-pod0", Server: "node1-pod0"}})
	rep, err := Build([]Input{{Label: "r", Run: run}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := "node0-pod0 (client), node1-pod0 (server): ip_local_port_range=1024 65535, tcp_tw_reuse=1"
	if got := rep.Runs[0].Scenarios[0].Sysctls; !strings.Contains(got, want) || !strings.Contains(got, "node0 (client): ip_local_port_range=32768 60999, tcp_tw_reuse=2") {
		t.Errorf("sysctls line %q lacks %q and node0's own values", got, want)
	}
	var md, html bytes.Buffer
	if err := Markdown(&md, rep); err != nil {
		t.Fatal(err)
	}
	if err := HTML(&html, rep); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "  - Effective sysctls (read by each agent in its network namespace): node0 (client)") || !strings.Contains(md.String(), want) {
		t.Errorf("markdown lacks the sysctls line:\n%s", md.String()[:min(md.Len(), 3000)])
	}
	if !strings.Contains(html.String(), "Effective sysctls") || !strings.Contains(html.String(), "tcp_tw_reuse=1") {
		t.Errorf("html lacks the sysctls line")
	}
}
