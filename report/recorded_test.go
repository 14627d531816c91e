package report

import (
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/results"
)

// Profiles' reports built from results files that real lab runs wrote
// (testdata/recorded/PROFILE.results.json.gz, the runs BENCHMARKS.md
// records): the original's rows in its order with every published figure
// from published/reports.json in its line, and each shape answered as the
// dated section says. A change to how a report lays out or judges a real
// run shows here, beside the synthetic runs of reproduced_test.go.
func TestReproducedFromRecordedRuns(t *testing.T) {
	for _, c := range []struct {
		profile, runID string
		want           map[string]string // shape → its answer
	}{
		{"tke", "20261204-171903-71bd", map[string]string{ // BENCHMARKS.md, "--profile tke with its Service-scale rows in the run"
			"short-connection HTTP through a Service, Cilium native ÷ iptables":                 ShapeDoesNot,
			"keep-alive HTTP through a Service, Cilium native ÷ iptables":                       ShapeNotShown,
			"pod-to-pod throughput, Cilium native ÷ iptables":                                   ShapeNotShown,
			"short-connection HTTP through a Service, Cilium overlay ÷ native":                  ShapeNotShown,
			"TCP_RR p50, Cilium overlay ÷ native":                                               ShapeNotShown,
			"L3/L4 policy on keep-alive HTTP through a Service, Cilium native":                  ShapeNotShown,
			"L3/L4 policy on keep-alive HTTP through a Service, Cilium overlay":                 ShapeNotShown,
			"L7 policy (a per-node proxy) on keep-alive HTTP through a Service, Cilium native":  ShapeHolds,
			"L7 policy (a per-node proxy) on keep-alive HTTP through a Service, Cilium overlay": ShapeHolds,
			"flow log (Hubble) on keep-alive HTTP through a Service, Cilium native":             ShapeNotShown,
			"flow log (Hubble) on keep-alive HTTP through a Service, Cilium overlay":            ShapeNotShown,
			"short-connection HTTP at 30,000 Services, Cilium native ÷ iptables":                ShapeHolds,
			"short-connection HTTP, 10,000 Services ÷ none, iptables":                           ShapeHolds,
			"short-connection HTTP, 30,000 Services ÷ none, iptables":                           ShapeHolds,
			"short-connection HTTP, 30,000 Services ÷ none, Cilium native":                      ShapeNotShown,
			"short-connection HTTP, 30,000 Services ÷ none, Cilium overlay":                     ShapeHolds,
		}},
		{"connectivity-perf", "20261204-173610-0189", map[string]string{ // "--profile connectivity-perf with cilium-cli's --msg-size"
			"TCP_CRR ÷ TCP_RR transaction rate, pod-to-pod same-node": ShapeHolds,
		}},
		{"eks", "20261203-140657-0aec", map[string]string{ // "--profile eks, quiet rerun"
			"TCP throughput, B ÷ A": ShapeNotShown,
			"TCP throughput, C ÷ D": ShapeNotShown,
			"TCP throughput, D ÷ A": ShapeNotShown,
			"TCP throughput, E ÷ A": ShapeNotShown,
			"UDP loss, E ÷ A (E's Bandwidth Manager + BBR in the original)": ShapeDoesNot,
			"UDP loss, D ÷ A": ShapeHolds,
			"HTTP p99 at 1,000 QPS, E ÷ A, within the published band (8.75–10.92 ms: ±25%)": ShapeNotShown,
			"HTTP max QPS, E ÷ A, within the published band (≈ 4,000–4,200 req/s: ±5%)":     ShapeNotShown,
		}},
		{"cilium-2021", "20261203-184549-139d", map[string]string{ // "--profile cilium-2021 with its table"
			"N streams ÷ 1 stream throughput (theirs: 32 streams on 32 threads; ours: N = the cores here)": ShapeNotShown,
		}},
		{"istio-scale", "20261203-073304-626c", map[string]string{ // the third run of the istio-scale section
			"queries per core, Istio ambient ÷ Cilium (judged as CPU per request, its reciprocal; the kernel's share counted here)": ShapeHolds,
		}},
	} {
		t.Run(c.profile, func(t *testing.T) {
			run := loadRecorded(t, c.profile)
			if run.RunID != c.runID || run.Plan.Profile != c.profile || run.Plan.Reproduces == nil {
				t.Fatalf("testdata/recorded/%s: run %s of profile %q, want %s of %s with its reproduction", c.profile, run.RunID, run.Plan.Profile, c.runID, c.profile)
			}
			m, out := reproducedReport(t, run)
			checkOriginalLayout(t, c.profile, m, out)
			got := shapeVerdicts(m)
			if len(got) != len(c.want) {
				t.Errorf("%d shapes, want %d: %v", len(got), len(c.want), got)
			}
			for ask, w := range c.want {
				if got[ask] != w {
					t.Errorf("%s: %q, want %q", ask, got[ask], w)
				}
			}
			for _, s := range m.Shapes {
				if !strings.Contains(out["md"], "- "+mdText(s.Text)) || !strings.Contains(s.Text, "→ "+s.Holds+": ") {
					t.Errorf("shape %q: its line does not say its answer in report.md: %q", s.Ask, s.Text)
				}
			}
		})
	}
}

// loadRecorded unpacks testdata/recorded/PROFILE.results.json.gz and loads
// it as `cnibench report` does.
func loadRecorded(t *testing.T, profile string) *results.Run {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "recorded", profile+".results.json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	out, err := os.Create(filepath.Join(dir, results.FileName))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, zr); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	run, err := results.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return run
}
