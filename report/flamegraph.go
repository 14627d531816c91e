package report

import (
	"bytes"
	"cmp"
	"fmt"
	"html/template"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/cnibench/cnibench/suite/flamegraph"
)

// FlameGraph is one profiled sample of a run (run --flame-graph): where
// its files are, what its stacks say in a few words, and the graph.
type FlameGraph struct {
	Label   string `json:"label"` // "run/scenario TEST placement"
	CPUs    string `json:"cpus"`
	Samples int    `json:"samples"`
	Idle    int    `json:"idle_samples"`
	Folded  string `json:"folded,omitempty"` // path as results.json names it
	SVGFile string `json:"svg,omitempty"`
	Kernel  string `json:"kernel,omitempty"` // "82% of the samples in the kernel, 31% in softirq"
	Hottest string `json:"hottest,omitempty"`
	Error   string `json:"error,omitempty"`
	svg     string // rendered from the folded stacks, for the HTML report
}

// flameGraphsSection is the runs' profiled samples: where each one's
// CPU went, its files, and the graph itself in HTML.
type flameGraphsSection struct{}

func (flameGraphsSection) stage() buildStage { return beforeControl }

func (flameGraphsSection) build(rep *Report, in []Input) error {
	rep.FlameGraphs = buildFlameGraphs(in)
	return nil
}

func (flameGraphsSection) markdown(b *strings.Builder, rep *Report) {
	markdownFlameGraphs(b, rep.FlameGraphs)
}

func (flameGraphsSection) html(b *strings.Builder, rep *Report) error {
	b.WriteString(string(htmlFlameGraphs(rep.FlameGraphs)) + "\n")
	return nil
}

// buildFlameGraphs reads each profiled sample's folded stacks from its
// run's directory and renders them; a graph whose files are gone says so.
func buildFlameGraphs(in []Input) []FlameGraph {
	var out []FlameGraph
	for _, input := range in {
		run := input.Run
		for _, res := range run.Results {
			fg := res.FlameGraph
			if fg == nil {
				continue
			}
			label := fmt.Sprintf("%s %s %s", res.Scenario, res.Test, res.Placement.Name())
			if len(in) > 1 {
				label = input.Label + "/" + label
			}
			g := FlameGraph{Label: label, CPUs: fg.CPUs, Samples: fg.Samples, Idle: fg.Idle, Folded: fg.Folded, SVGFile: fg.SVG, Error: fg.Error}
			if g.Error == "" {
				g.fill(run.Dir)
			}
			out = append(out, g)
		}
	}
	return out
}

func (g *FlameGraph) fill(dir string) {
	f, err := os.Open(filepath.Join(dir, filepath.FromSlash(g.Folded)))
	if err != nil {
		g.Error = fmt.Sprintf("folded stacks not found beside the results: %v", err)
		return
	}
	defer f.Close()
	s, err := flamegraph.ReadFolded(f)
	if err != nil {
		g.Error = err.Error()
		return
	}
	s.Idle = g.Idle
	g.Kernel, g.Hottest = summarise(s)
	var b bytes.Buffer
	if err := flamegraph.SVG(&b, s, g.Label+": CPUs "+g.CPUs); err != nil {
		g.Error = err.Error()
		return
	}
	g.svg = b.String()
}

// summarise says how much of the stacks is the kernel's and softirq's,
// and names the functions with the most self time (leaf samples).
func summarise(s *flamegraph.Stacks) (kernel, hottest string) {
	total := s.Samples()
	if total == 0 {
		return "", ""
	}
	self := map[string]int{}
	var inKernel, inSoftirq int
	for stack, n := range s.Counts {
		frames := strings.Split(stack, ";")
		leaf := frames[len(frames)-1]
		self[leaf] += n
		if strings.HasSuffix(leaf, flamegraph.KernelSuffix) {
			inKernel += n
		}
		if strings.Contains(stack, ";handle_softirqs_[k]") || strings.Contains(stack, ";__do_softirq_[k]") || strings.Contains(stack, ";net_rx_action_[k]") {
			inSoftirq += n
		}
	}
	pct := func(n int) string { return fmt.Sprintf("%.0f%%", 100*float64(n)/float64(total)) }
	kernel = fmt.Sprintf("%s of the samples in the kernel, %s in softirq (receive processing, whichever task it interrupted)", pct(inKernel), pct(inSoftirq))
	leaves := slices.SortedFunc(maps.Keys(self), func(a, b string) int { return cmp.Or(self[b]-self[a], strings.Compare(a, b)) })
	var top []string
	for _, l := range leaves[:min(6, len(leaves))] {
		name, k := strings.CutSuffix(l, flamegraph.KernelSuffix)
		if k {
			name += " (kernel)"
		}
		top = append(top, name+" "+pct(self[l]))
	}
	return kernel, "most self time: " + strings.Join(top, ", ")
}

const flameGraphsHeading = "Flame graphs"

// flameGraphsAbout opens the section in both formats.
var flameGraphsAbout = "CPU stacks sampled on the client's and server's CPUs (" + flamegraph.Tool + ") in one extra sample after the rounds, which no statistic uses."

// markdownFlameGraphs lists the graphs with their files and summaries.
func markdownFlameGraphs(b *strings.Builder, gs []FlameGraph) {
	if len(gs) == 0 {
		return
	}
	b.WriteString("\n## " + flameGraphsHeading + "\n\n")
	b.WriteString(flameGraphsAbout + " The graphs are in report.html; the folded stacks open in flamegraph.pl or speedscope.\n\n")
	for _, g := range gs {
		if g.Error != "" {
			fmt.Fprintf(b, "- %s: no graph: %s\n", mdText(g.Label), mdText(g.Error))
			continue
		}
		fmt.Fprintf(b, "- %s (CPUs %s, %d samples, %d idle left out): %s; %s. Files: `%s`, `%s`\n",
			mdText(g.Label), g.CPUs, g.Samples, g.Idle, g.Kernel, mdText(g.Hottest), g.SVGFile, g.Folded)
	}
	b.WriteString("\n")
}

// htmlFlameGraphs is the HTML section with every graph inline.
func htmlFlameGraphs(gs []FlameGraph) template.HTML {
	if len(gs) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString(htmlHeading("h2", "flamegraphs", flameGraphsHeading) + "\n<p>" + template.HTMLEscapeString(flameGraphsAbout+" Hover a frame for its samples; kernel frames are orange.") + "</p>\n")
	for _, g := range gs {
		b.WriteString("<h3>" + template.HTMLEscapeString(g.Label) + "</h3>\n")
		if g.Error != "" {
			b.WriteString("<p>No graph: " + template.HTMLEscapeString(g.Error) + "</p>\n")
			continue
		}
		b.WriteString("<p>" + template.HTMLEscapeString(fmt.Sprintf("CPUs %s, %d samples (%d idle left out): %s; %s. Folded stacks: %s", g.CPUs, g.Samples, g.Idle, g.Kernel, g.Hottest, g.Folded)) + "</p>\n")
		b.WriteString(`<div class="flamegraph">` + g.svg + "</div>\n") // rendered by us from numbers and escaped names
	}
	return template.HTML(b.String())
}
