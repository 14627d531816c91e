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
	ShortFile    = "report-short.md"
	CSVFile      = "cells.csv"
)

// Formats a report can be written in.
const (
	FormatMarkdown = "md"
	FormatHTML     = "html"
	FormatJSON     = "json"
	FormatShort    = "short" // the answers and warnings for a pull-request comment
	FormatCSV      = "csv"   // one row per scenario × test × placement × metric
)

// formats are the known formats, in the order "all" writes them, with
// their file and renderer.
var formats = []struct {
	name, file string
	render     func(io.Writer, *Report) error
}{
	{FormatMarkdown, MarkdownFile, Markdown},
	{FormatHTML, HTMLFile, HTML},
	{FormatJSON, JSONFile, JSON},
	{FormatShort, ShortFile, Short},
	{FormatCSV, CSVFile, CSV},
}

// DefaultFormats are written when none are asked for.
var DefaultFormats = []string{FormatMarkdown, FormatHTML}

// formatNames lists the known formats for messages.
func formatNames() string {
	var n []string
	for _, f := range formats {
		n = append(n, f.name)
	}
	return strings.Join(n, ", ") + ", all"
}

// ParseFormats reads a --format value: a comma-separated list of known
// formats (md, html, json, short, csv), or all.
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
			for _, k := range formats {
				add = append(add, k.name)
			}
		case "markdown":
			add = []string{FormatMarkdown}
		default:
			if Renderer(f) == nil {
				return nil, fmt.Errorf("--format %q: unknown format %q (known: %s)", s, f, formatNames())
			}
			add = []string{f}
		}
		for _, a := range add {
			if !seen[a] {
				seen[a] = true
				out = append(out, a)
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--format %q: no format given (known: %s)", s, formatNames())
	}
	return out, nil
}

// Renderer is the function that writes a format, nil for an unknown one.
func Renderer(format string) func(io.Writer, *Report) error {
	for _, f := range formats {
		if f.name == format {
			return f.render
		}
	}
	return nil
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
	for _, f := range formats {
		if f.name == format {
			return f.file
		}
	}
	return MarkdownFile
}

// Write renders rep in each format into dir, atomically per file (temp
// file and rename), and returns the paths written.
func Write(dir string, rep *Report, formats []string) ([]string, error) {
	var paths []string
	for _, f := range formats {
		render := Renderer(f)
		if render == nil {
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
