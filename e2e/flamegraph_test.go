package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	cnbresults "github.com/cnibench/cnibench/results"
	"github.com/cnibench/cnibench/suite/flamegraph"
)

// run --flame-graph samples the chosen test's CPU stacks in an extra
// sample after the rounds: the SVG beside results.json is well-formed and
// its frames hold the kernel's TCP send and receive paths, report.html
// has it inline, the folded stacks are kept and perf's raw data is not,
// and the measured samples are the rounds' only.
func TestFlameGraph(t *testing.T) {
	if _, err := exec.LookPath("perf"); err != nil {
		t.Skip("no perf (Debian linux-perf; scripts/setup.sh installs it)")
	}
	l := newLab(t)
	out := filepath.Join(t.TempDir(), "out")
	stdout, stderr, code := l.run("run", "--tests", "TCP_STREAM,TCP_RR", "--placements", "pod-to-pod/other-node",
		"--rounds", "1", "--duration", "500ms", "--warmup", "100ms", "--flame-graph", "TCP_STREAM", "--out", out)
	if code != 0 {
		t.Fatalf("run exited %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	run, err := cnbresults.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	var fg *cnbresults.FlameGraph
	for _, r := range run.Results {
		if len(r.Samples) != 1 {
			t.Errorf("%s: %d samples, want the one measured", r.Test, len(r.Samples))
		}
		if r.Test == "TCP_STREAM" {
			fg = r.FlameGraph
		} else if r.FlameGraph != nil {
			t.Errorf("%s has a flame graph", r.Test)
		}
	}
	if fg == nil || fg.Error != "" || fg.Samples == 0 || fg.SVG == "" || fg.Folded == "" {
		t.Fatalf("TCP_STREAM flame graph %+v", fg)
	}
	svg, err := os.ReadFile(filepath.Join(out, fg.SVG))
	if err != nil {
		t.Fatal(err)
	}
	frames, err := flamegraph.Titles(svg)
	if err != nil {
		t.Fatalf("%s is not well-formed SVG: %v", fg.SVG, err)
	}
	all := strings.Join(frames, "\n")
	for _, want := range []string{"tcp_sendmsg (", "tcp_v4_rcv ("} {
		if !strings.Contains(all, want) {
			t.Errorf("no kernel frame %q among the %d frames of %s", want, len(frames), fg.SVG)
		}
	}
	if _, err := os.Stat(filepath.Join(out, fg.Folded)); err != nil {
		t.Errorf("folded stacks: %v", err)
	}
	if left, _ := filepath.Glob(filepath.Join(out, "flamegraphs", "*.perf.data")); len(left) > 0 {
		t.Errorf("perf data left: %v", left)
	}
	html, err := os.ReadFile(filepath.Join(out, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(html, []byte(`<div class="flamegraph"><svg`)) || !bytes.Contains(html, []byte("tcp_sendmsg (")) {
		t.Error("report.html has no inline flame graph with the kernel's frames")
	}
}
