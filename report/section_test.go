package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// toySection is a whole report section in one file: a model built from
// the results, kept in report.json, and its Markdown and HTML.
type toySection struct{}

type toyModel struct {
	Scenarios []string `json:"scenarios"`
}

func (toySection) stage() buildStage { return beforeControl }

func (toySection) build(rep *Report, in []Input) error {
	var m toyModel
	for _, input := range in {
		for _, sc := range input.Run.Scenarios {
			m.Scenarios = append(m.Scenarios, sc.Name)
		}
	}
	rep.setExtra("toy", m)
	return nil
}

func (toySection) markdown(b *strings.Builder, rep *Report) {
	m := rep.Extra["toy"].(toyModel)
	fmt.Fprintf(b, "\n## Toy\n\n%d scenarios: %s\n", len(m.Scenarios), mdText(strings.Join(m.Scenarios, ", ")))
}

var toyHTML = sectionTmpl("toy", `<h2 id="toy">Toy</h2><p>{{len .Scenarios}} scenarios</p>`)

func (toySection) html(b *strings.Builder, rep *Report) error {
	return toyHTML.Execute(b, rep.Extra["toy"])
}

// withSection puts s into the report's sections after the one of type
// after, for the test only.
func withSection(t *testing.T, after section, s section) {
	t.Helper()
	was := sections
	t.Cleanup(func() { sections = was })
	i := slices.Index(sections, after)
	if i < 0 {
		t.Fatalf("no section %T", after)
	}
	sections = slices.Insert(slices.Clone(sections), i+1, s)
}

// A new section is one file and a line in sections: the toy above,
// listed after the plan, is built from the results into report.json and
// shows in report.md and report.html where it is listed.
func TestNewSectionIsOneFile(t *testing.T) {
	withSection(t, planSection{}, toySection{})
	rep := buildFixture(t)
	out := renderMDHTML(t, rep)
	var js bytes.Buffer
	if err := JSON(&js, rep); err != nil {
		t.Fatal(err)
	}
	n := len(rep.Runs[0].Scenarios)
	for format, order := range map[string][]string{
		"md":   {"## Plan", fmt.Sprintf("## Toy\n\n%d scenarios: ", n), "## At a glance"},
		"html": {`<h2 id="plan">`, fmt.Sprintf(`<h2 id="toy">Toy</h2><p>%d scenarios</p>`, n), `<h2 id="glance">`},
	} {
		at := 0
		for _, s := range order {
			i := strings.Index(out[format][at:], s)
			if i < 0 {
				t.Fatalf("%s: %q missing, or not after %v", format, s, order)
			}
			at += i + len(s)
		}
	}
	var back struct {
		Extra map[string]toyModel `json:"extra_sections"`
	}
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if got := back.Extra["toy"].Scenarios; len(got) != n || got[0] != rep.Runs[0].Scenarios[0].Name {
		t.Errorf("report.json extra_sections.toy = %v, want the %d scenarios", got, n)
	}
}
