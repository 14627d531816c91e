package report

import (
	"fmt"
	"html/template"
	"math"
	"strings"

	"github.com/cnibench/cnibench/datapath/sweep"
)

// scaleTable is one table of the Service-scale section, as plain strings
// both renderers share.
type scaleTable struct {
	Title string
	Head  []string
	Rows  [][]string
	Notes []string
}

// tables lays the analysis out: one degradation table per datapath, then
// the fits.
func (ss *ServiceScale) tables() []scaleTable {
	var out []scaleTable
	for _, d := range ss.Datapaths {
		t := scaleTable{Title: fmt.Sprintf("%s (%s) on %s, test Service position %s", d.Scenario, d.Datapath, d.Placement, d.Position)}
		t.Head = []string{"Services", "programming (gen + apply)", "verify"}
		synced := d.synced()
		if synced {
			t.Head = append(t.Head, "API writes", "node sync", "per-Service latency p50 / p99")
		}
		for _, tr := range d.Metrics {
			t.Head = append(t.Head, tr.Name)
		}
		t.Head = append(t.Head, "counts (kernel/expected)", "memory", "conntrack")
		for _, s := range d.Steps {
			row := []string{thousands(s.Services) + " (test at " + thousands(s.TestPosition) + ")",
				fmt.Sprintf("%s (%s + %s)", msText(float64(s.ProgramMs)), msText(float64(s.GenerateMs)), msText(float64(s.ApplyMs))),
				msText(float64(s.VerifyMs))}
			if synced {
				row = append(row, writesText(s.Sync), syncText(s.Sync), latencyText(s.Sync))
			}
			for _, m := range s.Metrics {
				row = append(row, scaleCell(m))
			}
			row = append(row, countsText(s), memoryText(s), conntrackText(s))
			t.Rows = append(t.Rows, row)
		}
		if d.Stopped != "" {
			t.Notes = append(t.Notes, "Stopped: "+d.Stopped)
		}
		if d.Error != "" {
			t.Notes = append(t.Notes, "Failed: "+d.Error)
		}
		t.Notes = append(t.Notes, d.Notes...)
		out = append(out, t)
	}
	fit := scaleTable{Title: "Fits against the Service count",
		Head: []string{"datapath", "per-connection cost (1/short RPS)", "TCP_CRR p50", "programming time growth"}}
	for _, d := range ss.Datapaths {
		fit.Rows = append(fit.Rows, []string{d.Scenario, fitText(d.Cost), fitText(d.CRRCost), programText(d.Program)})
	}
	fit.Notes = append(fit.Notes, "Per-connection cost is 1e6 / short-connection RPS per sample (µs of wall time per connection at 64 concurrent), fitted linearly against the Service count; "+
		"programming growth is the exponent of a power-law fit (1 linear, 2 quadratic) and the linear slope.")
	out = append(out, fit)
	return out
}

func scaleCell(m ScaleMetric) string {
	if m.Value == nil {
		return "–"
	}
	s := fmtNum(float64(m.Value.Median))
	if m.VsStep0 == nil {
		return s
	}
	pct := (float64(m.Ratio) - 1) * 100
	return fmt.Sprintf("%s (%+.1f%%, %s)", s, pct, m.VsStep0.Verdict)
}

func countsText(s ScaleStep) string {
	c, e := s.Counts, s.Expected
	parts := []string{fmt.Sprintf("%s/%s svc", thousands(c.Services), thousands(e.Services)),
		fmt.Sprintf("%s/%s ep", thousands(c.Endpoints), thousands(e.Endpoints))}
	if c.Rules > 0 || e.Rules > 0 {
		parts = append(parts, fmt.Sprintf("%s/%s rules", thousands(c.Rules), thousands(e.Rules)))
	}
	if c.Elements > 0 || e.Elements > 0 {
		parts = append(parts, fmt.Sprintf("%s/%s elements", thousands(c.Elements), thousands(e.Elements)))
	}
	if c.MapEntries > 0 || e.MapEntries > 0 {
		parts = append(parts, fmt.Sprintf("%s/%s map entries", thousands(c.MapEntries), thousands(e.MapEntries)))
	}
	return strings.Join(parts, ", ")
}

// synced tells whether the sweep verified its steps on a cluster's nodes
// (then the table gets a "node sync" column).
func (d ScaleDatapath) synced() bool {
	for _, s := range d.Steps {
		if s.Sync != nil {
			return true
		}
	}
	return false
}

// syncText is one step's sync per node: "worker-a 1.2s, worker-b 1.4s
// (API only: iptables-legacy)".
func syncText(s *sweep.Sync) string {
	if s == nil {
		return "–"
	}
	if len(s.Nodes) == 0 {
		return s.Mode + " only"
	}
	var p []string
	for _, n := range s.Nodes {
		t := n.Node + " " + msText(float64(n.Time.Seconds()*1000))
		if n.Mode != "node" {
			t = n.Node + " API only"
		}
		if n.Note != "" {
			t += " (" + n.Note + ")"
		}
		p = append(p, t)
	}
	return strings.Join(p, ", ")
}

// writesText is a step's API writes: "34.1 s (2,000 writes, 59/s)".
func writesText(s *sweep.Sync) string {
	if s == nil || (s.Writes == 0 && s.APIWrites == 0) {
		return "–"
	}
	t := msText(s.APIWrites.Seconds() * 1000)
	if s.Writes > 0 {
		t += " (" + thousands(s.Writes) + " writes"
		if s.APIWrites > 0 {
			t += fmt.Sprintf(", %.0f/s", float64(s.Writes)/s.APIWrites.Seconds())
		}
		t += ")"
	}
	return t
}

// latencyText is a step's per-Service programming latency: "1.2 s /
// 2.3 s (1,000 Services, ±1 s)".
func latencyText(s *sweep.Sync) string {
	if s == nil || s.Latency == nil {
		return "–"
	}
	l := s.Latency
	if l.Services == 0 {
		return fmt.Sprintf("– (%s not seen on every node)", thousands(l.Unresolved))
	}
	t := fmt.Sprintf("%s / %s (%s Services, ±%s", msText(l.P50.Seconds()*1000), msText(l.P99.Seconds()*1000),
		thousands(l.Services), msText(l.Resolution.Seconds()*1000))
	if l.Unresolved > 0 {
		t += fmt.Sprintf(", %s not seen on every node", thousands(l.Unresolved))
	}
	return t + ")"
}

func memoryText(s ScaleStep) string {
	var p []string
	if s.Memory.BPFMapBytes > 0 {
		p = append(p, bytesText(s.Memory.BPFMapBytes)+" BPF maps")
	}
	if s.Memory.RulesetBytes > 0 {
		p = append(p, bytesText(s.Memory.RulesetBytes)+" ruleset")
	}
	if len(p) == 0 {
		return "–"
	}
	return strings.Join(p, ", ")
}

func conntrackText(s ScaleStep) string {
	t := "not loaded"
	if s.Conntrack == -2 { // suite.ConntrackUnknown
		t = "not read"
	}
	if s.Conntrack >= 0 {
		t = thousands(s.Conntrack)
	}
	if s.FlowEntries > 0 {
		t += fmt.Sprintf(", %s BPF flow entries", thousands(s.FlowEntries))
	}
	return t
}

func bytesText(b int64) string {
	switch {
	case b >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
	case b >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(b)/(1<<10))
	}
	return fmt.Sprintf("%d B", b)
}

func fitText(f *ScaleFit) string {
	if f == nil {
		return "–"
	}
	return fmt.Sprintf("%+.2f %s per 1,000 Services, r² %.2f (n=%d)", float64(f.PerThousand), f.Unit, float64(f.R2), f.N)
}

func programText(p *ProgramFit) string {
	if p == nil {
		return "–"
	}
	exp := "exponent n/a (fewer than 4 steps)"
	if !math.IsNaN(float64(p.Exponent)) {
		exp = fmt.Sprintf("exponent %.2f (a + b·Services^k, r² %.2f)", float64(p.Exponent), float64(p.ExponentR2))
	}
	lin := ""
	if !math.IsNaN(float64(p.MsPerThous)) {
		lin = fmt.Sprintf("; linear fit %s per 1,000 Services (r² %.2f)", msText(float64(p.MsPerThous)), float64(p.R2))
	}
	return fmt.Sprintf("%s%s; %s for %s Services = %.1f µs per Service; generation ≤ %.1f%%",
		exp, lin, msText(float64(p.MaxMs)), thousands(p.MaxServices), float64(p.UsPerService), float64(p.GenSharePct))
}

// serviceScaleSection analyses a Service-scale sweep (one run only): a
// degradation table per datapath, the fits and their charts.
type serviceScaleSection struct{}

func (serviceScaleSection) stage() buildStage { return beforeControl } // its verdicts join the family

func (serviceScaleSection) build(rep *Report, in []Input) error {
	if len(in) != 1 {
		return nil
	}
	var err error
	rep.ServiceScale, err = buildServiceScale(in[0].Run, rep.Options)
	return err
}

func (serviceScaleSection) markdown(b *strings.Builder, rep *Report) {
	if rep.ServiceScale != nil {
		markdownServiceScale(b, rep.ServiceScale)
	}
}

func (serviceScaleSection) html(b *strings.Builder, rep *Report) error {
	h, err := htmlServiceScale(rep.ServiceScale)
	b.WriteString(string(h) + "\n")
	return err
}

const (
	serviceScaleHeading = "Service scale"
	serviceScaleAbout   = "Each step adds dummy Services (cumulative) to every node's Service datapath, as kube-proxy programs every node, verifies the kernel holds them (counts and memory are per node), then measures pod-to-service (other-node, or same-node on a one-node target: each table says which). " +
		"On clusters, API writes and node sync are the two parts of a step, and the per-Service latency runs from a Service's last API write until every node's datapath held it (polled: late by up to the ± interval). " +
		"Median over rounds; each value with its change against step 0 and its verdict against step 0 (unpaired: Mann-Whitney with the Hodges-Lehmann shift; significant only when its interval excludes no change and it survives the report's false-discovery control)."
)

// markdownServiceScale writes the section in Markdown.
func markdownServiceScale(b *strings.Builder, ss *ServiceScale) {
	b.WriteString("\n## " + serviceScaleHeading + "\n\n" + serviceScaleAbout + "\n\n")
	for _, f := range ss.Findings {
		fmt.Fprintf(b, "- %s\n", mdText(f))
	}
	for _, t := range ss.tables() {
		fmt.Fprintf(b, "\n### %s\n\n", mdText(t.Title))
		mdRow(b, t.Head...)
		mdSep(b, len(t.Head), 1, len(t.Head))
		for _, r := range t.Rows {
			mdRow(b, r...)
		}
		for _, n := range t.Notes {
			fmt.Fprintf(b, "\n%s\n", mdText(n))
		}
	}
}

// lineChartsHTML draws .Charts ([]lineChart) as SVG figures.
const lineChartsHTML = `<div class="charts">{{range .Charts}}<figure style="width:{{.W}}px"><figcaption>{{.Title}}</figcaption>
<svg width="{{.W}}" height="{{.H}}" viewBox="0 0 {{.W}} {{.H}}" role="img" aria-label="{{.Title}}">
{{range .Grid}}<line x1="{{.X1}}" y1="{{.Y1}}" x2="{{.X2}}" y2="{{.Y2}}" class="{{.Class}}" shape-rendering="crispEdges"/>{{end}}
{{range .Series}}{{if not .NoLine}}<polyline points="{{.Points}}" fill="none" stroke="{{.Colour}}" stroke-width="2"/>{{end}}{{range .Dots}}<circle cx="{{.X}}" cy="{{.Y}}" r="3" fill="{{.Colour}}"><title>{{.Tip}}</title></circle>{{end}}{{end}}
{{range .Texts}}<text x="{{.X}}" y="{{.Y}}" text-anchor="{{.Anchor}}" class="{{.Class}}">{{.S}}</text>{{end}}
</svg>
<div class="legend">{{range .Series}}<span><svg width="12" height="12" style="display:inline-block;vertical-align:-1px;margin-right:6px"><rect width="12" height="12" fill="{{.Colour}}"/></svg>{{.Name}}</span>{{end}}</div>
</figure>{{end}}</div>`

// lineChartsTmpl renders a []lineChart alone (the churn's timeline).
var lineChartsTmpl = template.Must(template.New("lines").Parse(lineChartsHTML))

var scaleTmpl = template.Must(template.New("scale").Parse(htmlHeading("h2", "service-scale", serviceScaleHeading) + `
<p class="about">` + serviceScaleAbout + `</p>
<ul>{{range .Findings}}<li>{{.}}</li>{{end}}</ul>
` + lineChartsHTML + `
{{range .Tables}}<h3>{{.Title}}</h3>
<div style="overflow-x:auto"><table><tr>{{range .Head}}<th>{{.}}</th>{{end}}</tr>
{{range .Rows}}<tr>{{range $i, $c := .}}<td{{if $i}} class="num"{{end}}>{{$c}}</td>{{end}}</tr>
{{end}}</table></div>
{{range .Notes}}<p class="muted">{{.}}</p>{{end}}{{end}}`))

// htmlServiceScale renders the section for the HTML report (escaped by
// html/template, so names from results cannot inject markup).
func htmlServiceScale(ss *ServiceScale) (template.HTML, error) {
	if ss == nil {
		return "", nil
	}
	var b strings.Builder
	err := scaleTmpl.Execute(&b, struct {
		Findings []string
		Charts   []lineChart
		Tables   []scaleTable
	}{ss.Findings, ss.charts(), ss.tables()})
	return template.HTML(b.String()), err
}
