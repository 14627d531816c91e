package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	cnbresults "github.com/cnibench/cnibench/results"
	"github.com/cnibench/cnibench/targets/labtarget"
)

// WireGuard between the nodes, natively routed and under VXLAN, against
// the same paths without it, in one run: each encrypted scenario proves
// before measuring that pod traffic between nodes goes through every
// node's WireGuard device both ways, its samples carry the daemons' CPU
// as the datapath's, the report says how traffic was encrypted, and the
// labs, daemons included, are gone afterwards.
func TestEncryptionScenarios(t *testing.T) {
	l := newLab(t)
	scenarios := []string{"native", "native+wireguard", "vxlan", "vxlan+wireguard"}
	labs := securityLabs(t, l, scenarios...)
	out := filepath.Join(t.TempDir(), "out")
	stdout, stderr, code := l.run("run", "--scenarios", strings.Join(scenarios, ","), "--tests", "TCP_STREAM,TCP_CRR",
		"--placements", "pod-to-pod/other-node", "--rounds", "1", "--duration", "400ms", "--warmup", "100ms", "--out", out)
	if code != 0 {
		t.Fatalf("run exited %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	run, err := cnbresults.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, sc := range run.Scenarios {
		raw, ok := sc.Target.Details["encryption"]
		if ok != strings.HasSuffix(sc.Name, "+wireguard") {
			t.Errorf("%s: encryption details %v", sc.Name, raw)
			continue
		}
		if !ok {
			continue
		}
		var c labtarget.EncryptionCheck
		decode(t, raw, &c)
		wantMTU := map[string]int{"native+wireguard": 1440, "vxlan+wireguard": 1390}[sc.Name]
		if c.MTU != wantMTU || len(c.Probes) != 1 || !strings.Contains(c.Probes[0], "packets out (encrypted)") || c.Kernel == "" {
			t.Errorf("%s: check %+v, want MTU %d and a probe through both devices", sc.Name, c, wantMTU)
		}
	}
	for _, r := range run.Results {
		for _, s := range r.Samples {
			if s.Error != "" {
				t.Errorf("%s %s: %s", r.Scenario, r.Test, s.Error)
				continue
			}
			encrypted := strings.HasSuffix(r.Scenario, "+wireguard")
			if u := s.DatapathUsage; encrypted != (u != nil) || encrypted && (len(u.Components) != 2 || u.CPUSec <= 0) {
				t.Errorf("%s %s: datapath usage %+v, want the two daemons' CPU exactly when encrypted", r.Scenario, r.Test, u)
			}
		}
	}
	md, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Encryption between nodes, proved before measuring: wireguard by wireguard-go", "vxlan+wireguard vs vxlan"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	for _, sl := range append(labs, l) {
		if left := sl.leftovers(); len(left) > 0 {
			t.Errorf("lab %s left: %v", sl.name, left)
		}
	}
}
