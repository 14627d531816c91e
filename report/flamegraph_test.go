package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/results"
	"github.com/cnibench/cnibench/suite/flamegraph"
)

// A run with a profiled sample gets a "Flame graphs" section: the graph
// inline in the HTML (rendered from the folded stacks beside
// results.json), the kernel and softirq shares and the hottest functions
// in Markdown; a graph whose stacks are gone, or that could not be made,
// says why instead.
func TestFlameGraphSection(t *testing.T) {
	f, err := os.Open("../suite/flamegraph/testdata/perf-script-tcp-stream.txt")
	if err != nil {
		t.Fatal(err)
	}
	stacks, err := flamegraph.ParsePerfScript(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "flamegraphs"), 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := os.Create(filepath.Join(dir, "flamegraphs", "a.folded"))
	if err != nil {
		t.Fatal(err)
	}
	if err := stacks.WriteFolded(out); err != nil {
		t.Fatal(err)
	}
	out.Close()

	run := loadFixture(t)
	run.Dir = dir
	run.Results[0].FlameGraph = &results.FlameGraph{CPUs: "0,1", Folded: "flamegraphs/a.folded", SVG: "flamegraphs/a.svg", Samples: stacks.Samples(), Idle: stacks.Idle}
	run.Results[1].FlameGraph = &results.FlameGraph{Error: "unsupported: perf (Debian package linux-perf) on this kernel (not found)"}
	run.Results[2].FlameGraph = &results.FlameGraph{CPUs: "0,1", Folded: "flamegraphs/gone.folded"}
	rep, err := Build([]Input{{Run: run}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.FlameGraphs) != 3 {
		t.Fatalf("%d flame graphs, want 3", len(rep.FlameGraphs))
	}
	g := rep.FlameGraphs[0]
	if g.Error != "" || !strings.Contains(g.Kernel, "% in softirq") || !strings.Contains(g.Hottest, "(kernel)") || !strings.HasPrefix(g.svg, "<svg") {
		t.Errorf("graph: %+v", g)
	}
	if !strings.Contains(rep.FlameGraphs[2].Error, "not found beside the results") {
		t.Errorf("missing stacks: %q", rep.FlameGraphs[2].Error)
	}
	r := renderMDHTML(t, rep)
	for _, want := range []string{"## Flame graphs", "most self time: ", "no graph: unsupported: perf", "`flamegraphs/a.folded`"} {
		if !strings.Contains(r["md"], want) {
			t.Errorf("markdown lacks %q", want)
		}
	}
	html := r["html"]
	if strings.Count(html, `class="flamegraph"`) < 2 || !strings.Contains(html, "tcp_sendmsg (") || !strings.Contains(html, "No graph: unsupported: perf") {
		t.Error("the HTML lacks the inline flame graph or the reason for a missing one")
	}
}
