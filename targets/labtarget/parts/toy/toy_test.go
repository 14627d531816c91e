package toy_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/netnsx"
	"github.com/cnibench/cnibench/lab"
	"github.com/cnibench/cnibench/lab/labtest"
	"github.com/cnibench/cnibench/report"
	"github.com/cnibench/cnibench/results"
	"github.com/cnibench/cnibench/suite"
	"github.com/cnibench/cnibench/targets/labtarget"
	"github.com/cnibench/cnibench/targets/labtarget/part"
)

// A new lab part, written here as a newcomer would: one sysctl set in
// every namespace of the lab, read back, put back at close. It uses
// nothing of the lab target but part.Env, and its registration is one
// line.
func init() { part.One(toySysctl{}) }

const (
	toyKey   = "net/ipv4/tcp_fin_timeout"
	toyValue = "17"
	toyLabel = "Toy sysctl, read back before measuring"
)

type toySysctl struct{}

func (toySysctl) Name() string                  { return "toy" }
func (toySysctl) Token() string                 { return "toy" }
func (toySysctl) Phase() part.Phase             { return part.Tuning }
func (toySysctl) Configure(*lab.Config)         {}
func (toySysctl) Conflicts(part.Scenario) error { return nil }

// Open sets the sysctl in every node and pod namespace and reads it back.
func (toySysctl) Open(ctx context.Context, env part.Env) (part.Opened, error) {
	o := &toyOpened{was: map[string]string{}}
	for _, e := range env.Lab().Endpoints() {
		was, err := readSysctl(e.NetnsPath())
		if err == nil {
			o.was[e.NetnsPath()] = was
			err = writeSysctl(e.NetnsPath(), toyValue)
		}
		if err == nil {
			var got string
			if got, err = readSysctl(e.NetnsPath()); err == nil && got != toyValue {
				err = fmt.Errorf("read back %s, want %s", got, toyValue)
			}
		}
		if err != nil {
			return o, fmt.Errorf("toy on %s: %w", e.Name, err)
		}
		o.sites++
	}
	return o, nil
}

type toyOpened struct {
	was   map[string]string // netns path → value before
	sites int
}

func (o *toyOpened) Checks() []results.Check {
	return []results.Check{{Part: "toy", Label: toyLabel, Text: fmt.Sprintf("%s=%s in %d namespaces", toyKey, toyValue, o.sites)}}
}

func (o *toyOpened) AddDetails(d map[string]any) { d["toy_sites"] = o.sites }

func (o *toyOpened) Close() error {
	for ns, v := range o.was {
		if err := writeSysctl(ns, v); err != nil {
			return err
		}
	}
	return nil
}

func readSysctl(ns string) (v string, err error) {
	err = netnsx.Do(ns, func() error {
		b, err := os.ReadFile("/proc/sys/" + toyKey)
		v = strings.TrimSpace(string(b))
		return err
	})
	return v, err
}

func writeSysctl(ns, v string) error {
	return netnsx.Do(ns, func() error { return os.WriteFile("/proc/sys/"+toyKey, []byte(v), 0o644) })
}

// The toy part end to end: parsed from its scenario name, opened by the
// lab target in its phase and proved, run, recorded in results.json
// (parts, checks, details), shown by the report, and closed: every
// namespace has its value back.
func TestToyPartEndToEnd(t *testing.T) {
	l := labtest.NewLabSized(t, "cnbtoy", 2, 2)
	before, err := readSysctl(netnsx.Path(l.Nodes[1].Pods[0].Netns))
	if err != nil || before == toyValue {
		t.Fatalf("before: %q %v", before, err)
	}
	name, err := results.ParseScenarioName("toy")
	if err != nil {
		t.Fatal(err)
	}
	sc, err := labtarget.ScenarioConfig(name, l.Config)
	if err != nil {
		t.Fatal(err)
	}
	cfg := labtarget.Config{Lab: l.Config, Parts: sc.Parts, Placements: []string{suite.PodToPodOtherNode}, RunID: "toy", Executable: cnibench(t)}
	tgt, err := labtarget.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			_ = tgt.Close()
		}
	}()
	if got, _ := readSysctl(netnsx.Path(l.Nodes[1].Pods[0].Netns)); got != toyValue {
		t.Fatalf("open: %s, want %s", got, toyValue)
	}
	plan, err := suite.Options{Tests: []string{"TCP_RR"}, Placements: cfg.Placements, Rounds: 1, Duration: 300 * time.Millisecond}.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	plan.Warmup = 0
	out := t.TempDir()
	r := &suite.Runner{Scenarios: []suite.Scenario{{Name: name.String(), Parts: name, Target: tgt}}, Plan: plan, OutDir: out, RunID: "toy"}
	if _, err := r.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	closed = true
	if err := tgt.Close(); err != nil {
		t.Fatal(err)
	}
	if got, _ := readSysctl(netnsx.Path(l.Nodes[1].Pods[0].Netns)); got != before {
		t.Errorf("after close: %s, want %s back", got, before)
	}
	run, err := results.Load(filepath.Join(out, results.FileName))
	if err != nil {
		t.Fatal(err)
	}
	want := results.Check{Part: "toy", Label: toyLabel, Text: fmt.Sprintf("%s=%s in 6 namespaces", toyKey, toyValue)}
	if s := run.Scenarios[0]; len(s.Checks) != 1 || s.Checks[0] != want || s.Parts.String() != "toy" || s.Target.Details["toy_sites"] != float64(6) {
		t.Fatalf("results.json scenario: parts %q checks %+v toy_sites %v", s.Parts, s.Checks, s.Target.Details["toy_sites"])
	}
	rep, err := report.Build([]report.Input{{Run: run}}, report.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var md strings.Builder
	if err := report.Markdown(&md, rep); err != nil {
		t.Fatal(err)
	}
	if line := "  - " + want.Label + ": " + want.Text + "\n"; !strings.Contains(md.String(), line) {
		t.Errorf("report.md lacks %q", line)
	}
}

// cnibench builds the binary the target starts as agents.
func cnibench(t *testing.T) string {
	bin := filepath.Join(t.TempDir(), "cnibench")
	cmd := exec.Command("go", "build", "-o", bin, "../../../../cmd/cnibench")
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("build cnibench: %v", err)
	}
	return bin
}
