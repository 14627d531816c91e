package report

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/cnibench/cnibench/results"
)

// Every recorded fixture's report, in Markdown and HTML (and JSON where
// no other golden holds it), byte for byte: the report is assembled from
// sections (section.go), and moving one must not move a byte.
func TestGoldenRenderings(t *testing.T) {
	load := func(dir string) func(*testing.T) []Input {
		return func(t *testing.T) []Input {
			run, err := results.Load(filepath.Join(fixtureDir, dir, results.FileName))
			if err != nil {
				t.Fatal(err)
			}
			return []Input{{Run: run}}
		}
	}
	compared := func(t *testing.T) []Input {
		return []Input{{Run: loadFixture(t), Label: "before"}, {Run: loadFixture(t), Label: "after"}}
	}
	for _, c := range []struct {
		name   string
		inputs func(*testing.T) []Input
		json   bool
	}{
		{"report", load("."), false},
		{"compare", compared, true},
		{"churn/report", load("churn"), true},
		{"servicescale/report", load("servicescale"), false},
		{"oldparts/report", load("oldparts"), true},
	} {
		t.Run(c.name, func(t *testing.T) {
			rep, err := Build(c.inputs(t), Options{})
			if err != nil {
				t.Fatal(err)
			}
			formats := []string{FormatMarkdown, FormatHTML}
			if c.json {
				formats = append(formats, FormatJSON)
			}
			for _, f := range formats {
				if c.name == "report" && f == FormatMarkdown {
					continue // report.golden.md (TestGoldenMarkdown)
				}
				var b bytes.Buffer
				if err := Renderer(f)(&b, rep); err != nil {
					t.Fatal(err)
				}
				got := b.Bytes()
				if f == FormatHTML && c.name != "report" {
					// The page around the body (style) is report.golden.html's.
					_, got, _ = bytes.Cut(got, []byte("<body>\n"))
				}
				golden(t, c.name+".golden."+f, got)
			}
		})
	}
}
