package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/internal/hosttest"
)

// run --profile tke ends with TKE's rows at scale: after the rounds, the
// same run sweeps the Service count on the columns' scenarios, measuring
// only the rows' test; step 0 is the rounds' own. CI-sized: one step of
// 5,000 Services (TKE's first), 3 short rounds, two of the columns.
func TestTKERowsAtScaleInTheRun(t *testing.T) {
	l := newLab(t)
	labs := scenarioLabs(t, l, "iptl", "ebpf")
	before := hosttest.Take(t)
	out := filepath.Join(t.TempDir(), "out")
	_, stderr := runOrSkip(t, l, "run", "--profile", "tke", "--scenarios", "iptables-legacy,ebpf", "--tests", "FORTIO_RPS_SHORT_C64,TCP_RR",
		"--scale-steps", "0,5000", "--duration", "300ms", "--warmup", "50ms", "--rounds", "3", "--out", out)
	for _, want := range []string{"then service-scale sweep over 0,5000 Services (4 endpoints each", "of FORTIO_RPS_SHORT_C64 on iptables-legacy, ebpf, vxlan+ebpf",
		"step 1/2 (0 Services): measured by the rounds before", "step 2/2 (5000 Services): measuring 1 tests × 3 rounds on iptables-legacy, ebpf"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("progress lacks %q:\n%s", want, stderr)
		}
	}
	b, err := os.ReadFile(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		scaleResults
		Plan struct{ Placements []string }
	}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	if r.Status != "complete" || len(r.Sweeps) != 2 || len(r.Plan.Placements) != 2 {
		t.Fatalf("status %s, %d sweeps, placements %v; want 2 sweeps and the rounds' two placements", r.Status, len(r.Sweeps), r.Plan.Placements)
	}
	for _, sw := range r.Sweeps {
		if len(sw.Steps) != 2 || sw.Stopped != "" || sw.Error != "" || sw.Steps[1].Counts != sw.Steps[1].Expected {
			t.Errorf("%s: %d steps, stopped %q, error %q, at 5,000 %+v", sw.Scenario, len(sw.Steps), sw.Stopped, sw.Error, sw.Steps)
		}
	}
	scaled := 0
	for _, res := range r.Results {
		if res.Services == 0 {
			continue
		}
		scaled++
		if res.Services != 5000 || res.Test != "FORTIO_RPS_SHORT_C64" || len(res.Samples) != 3 {
			t.Errorf("%s %s at %d Services: %d samples", res.Scenario, res.Test, res.Services, len(res.Samples))
		}
		for _, s := range res.Samples {
			if s.Error != "" {
				t.Errorf("%s at %d Services: %s", res.Scenario, res.Services, s.Error)
			}
		}
	}
	if scaled != 2 {
		t.Errorf("%d results at scale, want FORTIO_RPS_SHORT_C64 on iptables-legacy and ebpf", scaled)
	}
	reportHas(t, out, "| Service scale 5,000: short-connection RPS | iptables | FORTIO_RPS_SHORT_C64 · pod-to-service/other-node · iptables-legacy · request rate | 22,237 req/s |",
		"| Service scale 10,000: short-connection RPS | iptables |", "not measured in this run: no step at 10,000 Services (--scale-steps)",
		"## FORTIO_RPS_SHORT_C64 · pod-to-service/other-node @ 5,000 Services", "## Service scale")
	leftClean(t, before, append(labs, l)...)
}
