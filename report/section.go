package report

import (
	"html/template"
	"strings"
)

// A section is one part of the report as a reader meets it (the answers,
// the plan, a table, an analysis), in one file that says how it reads in
// Markdown and in HTML: the two formats share its order and its labels,
// and a new part of the report is its file and a line in sections.
type section interface {
	// markdown appends the section to a report.md; nothing when it has
	// nothing to show.
	markdown(b *strings.Builder, rep *Report)
	// html appends the section to report.html's body.
	html(b *strings.Builder, rep *Report) error
}

// A builder is a section with a model of its own, computed from the
// results into the report (its field, or Report.Extra) at its stage of
// Build, and so written to report.json too.
type builder interface {
	section
	build(rep *Report, in []Input) error
	stage() buildStage
}

// buildStage is when Build computes a section's model.
type buildStage int

const (
	// beforeControl: once the tests' rows are built, so that the
	// section's own verdicts join the report's false-discovery family
	// (fdr.go).
	beforeControl buildStage = iota
	// afterControl: once every verdict is final, for a section that
	// shows verdicts as the test tables show them.
	afterControl
)

// sections are the report's parts in the order a reader meets them.
var sections = []section{
	titleSection{},
	reproducedSection{},
	answersSection{},
	warningsLineSection{},
	environmentSection{},
	planSection{},
	serviceScaleSection{},
	policyScaleSection{},
	churnSection{},
	glanceSection{},
	warningsSection{},
	chartsSection{},
	testsSection{},
	pairsSection{},
	flameGraphsSection{},
	perCoreSection{},
	methodSection{},
}

// buildSections computes the models of the sections built at stage, in
// the sections' order.
func buildSections(rep *Report, in []Input, at buildStage) error {
	for _, s := range sections {
		if b, ok := s.(builder); ok && b.stage() == at {
			if err := b.build(rep, in); err != nil {
				return err
			}
		}
	}
	return nil
}

// setExtra keeps the model of a section that has no field of its own in
// Report under its key of report.json's extra_sections.
func (rep *Report) setExtra(key string, model any) {
	if rep.Extra == nil {
		rep.Extra = map[string]any{}
	}
	rep.Extra[key] = model
}

// sectionTmpl parses one section's HTML; html/template escapes every
// value for its context, so names from results cannot inject markup.
func sectionTmpl(name, text string) *template.Template {
	return template.Must(template.New(name).Parse(text))
}

// htmlHeading is a heading of the HTML report: the label the Markdown
// heading shows, escaped, with its anchor.
func htmlHeading(tag, id, label string) string {
	return "<" + tag + ` id="` + id + `">` + template.HTMLEscapeString(label) + "</" + tag + ">"
}
