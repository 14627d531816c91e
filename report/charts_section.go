package report

import "strings"

// chartsSection draws the report's charts (charts.go) in HTML: a bar per
// column for every higher-is-better headline, then the latency
// percentiles. Markdown has no charts.
type chartsSection struct{}

func (chartsSection) markdown(*strings.Builder, *Report) {}

var chartsHTML = sectionTmpl("charts", `{{define "figure"}}<figure><figcaption>{{.Title}}</figcaption>
<svg width="{{.Width}}" height="{{.Height}}" viewBox="0 0 {{.Width}} {{.Height}}" role="img" aria-label="{{.Title}}">
{{range .Lines}}<line x1="{{.X1}}" y1="{{.Y1}}" x2="{{.X2}}" y2="{{.Y2}}" class="{{.Class}}" shape-rendering="crispEdges"/>{{end}}
{{range .Rects}}<rect x="{{.X}}" y="{{.Y}}" width="{{.W}}" height="{{.H}}" fill="{{.Fill}}" shape-rendering="crispEdges"><title>{{.Tip}}</title></rect>{{end}}
{{range .Over}}<line x1="{{.X1}}" y1="{{.Y1}}" x2="{{.X2}}" y2="{{.Y2}}" class="{{.Class}}" shape-rendering="crispEdges"/>{{end}}
{{range .Texts}}<text x="{{.X}}" y="{{.Y}}" text-anchor="{{.Anchor}}" class="{{.Class}}">{{.S}}</text>{{end}}
</svg></figure>
{{end}}{{if .Charts}}`+htmlHeading("h2", "charts", "Charts")+`
<div class="legend">{{range .Columns}}<span><svg width="12" height="12" style="display:inline-block;vertical-align:-1px;margin-right:6px"><rect width="12" height="12" fill="{{.Colour}}" shape-rendering="crispEdges"/></svg>{{.Label}}</span>{{end}}</div>
<div class="charts">
{{range .Charts}}{{if eq .Kind "bar"}}{{template "figure" .}}{{end}}{{end}}</div>
<div class="charts">
{{range .Charts}}{{if eq .Kind "latency"}}{{template "figure" .}}{{end}}{{end}}</div>
{{end}}
`)

// colView is a column in the charts' legend.
type colView struct{ Label, Colour string }

func (chartsSection) html(b *strings.Builder, rep *Report) error {
	var cols []colView
	for i, c := range rep.Columns {
		cols = append(cols, colView{c.Label, colour(i)})
	}
	return chartsHTML.Execute(b, struct {
		Columns []colView
		Charts  []chart
	}{cols, rep.charts()})
}
