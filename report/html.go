package report

import (
	_ "embed"
	"html/template"
	"io"
	"strings"
)

// report.html.tmpl is the page around the sections: its title and style.
//
//go:embed report.html.tmpl
var htmlSource string

// htmlTmpl is parsed once; html/template escapes every value for its
// context (text, attribute), so names from results cannot inject markup.
var htmlTmpl = template.Must(template.New("report").Parse(htmlSource))

// HTML writes the report as one self-contained page: inline CSS and SVG,
// no script, no external reference; its body is the sections (section.go)
// in the order a reader meets them.
func HTML(w io.Writer, rep *Report) error {
	var body strings.Builder
	for _, s := range sections {
		if err := s.html(&body, rep); err != nil {
			return err
		}
	}
	return htmlTmpl.Execute(w, struct {
		Title string
		Body  template.HTML // the sections, escaped by their own templates
	}{rep.Title, template.HTML(body.String())})
}

// labelled is a row of a table with a label column (environment, plan).
type labelled struct {
	Label string
	Cells []string
}

// cellView is a table cell with its CSS class (glance and test tables).
type cellView struct{ Text, Class string }

func valueCell(x *Value, level float64) cellView {
	if x == nil {
		return cellView{"missing", "num muted"}
	}
	return cellView{cellText(x, level), "num"}
}

func deltaCell(d *Delta) cellView {
	switch {
	case d == nil:
		return cellView{"", "verdict"}
	case d.Better:
		return cellView{d.Text, "verdict better"}
	case d.Worse:
		return cellView{d.Text, "verdict worse"}
	}
	return cellView{d.Text, "verdict muted"}
}

func winnerCell(w *Winner) cellView {
	switch {
	case w == nil:
		return cellView{"", "verdict"}
	case w.Verdict == VerdictSignificant:
		return cellView{w.Text, "verdict win"}
	}
	return cellView{w.Text, "verdict muted"}
}

// cellTexts are the cells' texts, for Markdown.
func cellTexts(cells []cellView) []string {
	out := make([]string, len(cells))
	for i, c := range cells {
		out[i] = c.Text
	}
	return out
}
