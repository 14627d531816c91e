package report

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/cnibench/cnibench/results"
)

// Report file names inside a results (or --out) directory.
const (
	MarkdownFile = "report.md"
	HTMLFile     = "report.html"
	JSONFile     = "report.json"
)

// Formats a report can be written in.
const (
	FormatMarkdown = "md"
	FormatHTML     = "html"
	FormatJSON     = "json"
)

// DefaultFormats are written when none are asked for.
var DefaultFormats = []string{FormatMarkdown, FormatHTML}

// ParseFormats reads a --format value: a comma-separated list of md, html,
// json, or all.
func ParseFormats(s string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	for _, f := range strings.Split(s, ",") {
		f = strings.ToLower(strings.TrimSpace(f))
		var add []string
		switch f {
		case "":
			continue
		case "all":
			add = []string{FormatMarkdown, FormatHTML, FormatJSON}
		case "markdown":
			add = []string{FormatMarkdown}
		case FormatMarkdown, FormatHTML, FormatJSON:
			add = []string{f}
		default:
			return nil, fmt.Errorf("--format %q: unknown format %q (known: md, html, json, all)", s, f)
		}
		for _, a := range add {
			if !seen[a] {
				seen[a] = true
				out = append(out, a)
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--format %q: no format given (known: md, html, json, all)", s)
	}
	return out, nil
}

// JSON writes the report data (tables, verdicts) for machines.
func JSON(w io.Writer, rep *Report) error {
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return fmt.Errorf("encode report: %w", err)
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// FileName is the file a format is written to.
func FileName(format string) string {
	switch format {
	case FormatHTML:
		return HTMLFile
	case FormatJSON:
		return JSONFile
	}
	return MarkdownFile
}

// Write renders rep in each format into dir, atomically per file (temp
// file and rename), and returns the paths written.
func Write(dir string, rep *Report, formats []string) ([]string, error) {
	var paths []string
	for _, f := range formats {
		render := Markdown
		switch f {
		case FormatHTML:
			render = HTML
		case FormatJSON:
			render = JSON
		case FormatMarkdown:
		default:
			return paths, fmt.Errorf("report: unknown format %q", f)
		}
		p := filepath.Join(dir, FileName(f))
		if err := writeAtomic(p, func(w io.Writer) error { return render(w, rep) }); err != nil {
			return paths, err
		}
		paths = append(paths, p)
	}
	return paths, nil
}

// writeAtomic writes a report file as results.json is written
// (results.WriteAtomic: whole or not at all, one file mode).
func writeAtomic(path string, render func(io.Writer) error) error {
	if err := results.WriteAtomic(path, render); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
