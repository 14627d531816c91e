package report

import (
	"os/exec"
	"strings"
	"testing"
)

// The renderer links no engine, target or runner: results and report
// import only the engines' type packages (issue 15), so that reading a
// results.json pulls in no sockets, epoll loops, netlink or BPF.
func TestReportLinksNoEngine(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go tool on PATH")
	}
	out, err := exec.Command("go", "list", "-deps", "github.com/cnibench/cnibench/report").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	types := map[string]bool{"engine/engineapi": true, "engine/httpload/httpapi": true, "engine/dnsload/dnsapi": true,
		"engine/kinds": true, "suite/flamegraph": true} // the kinds registry and the flame graph renderer: no engine, no runner
	for _, p := range strings.Fields(string(out)) {
		rel, ok := strings.CutPrefix(p, "github.com/cnibench/cnibench/")
		if !ok || types[rel] {
			continue
		}
		for _, banned := range []string{"engine", "suite", "targets", "lab", "agent"} {
			if rel == banned || strings.HasPrefix(rel, banned+"/") {
				t.Errorf("report links %s", rel)
			}
		}
	}
}
