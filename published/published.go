// Package published holds the figures of the public benchmark reports
// cnibench's profiles reproduce (reports.json, embedded in the binary):
// per report its source, date and hardware, and per cell of its table the
// row, column, value and unit as the report printed them. The figures are
// data, never strings in code, so a correction is one line of one file.
package published

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"sync"
)

//go:embed reports.json
var reportsJSON []byte

// Report is one published report and its table.
type Report struct {
	ID       string `json:"id"` // the profile that reproduces it is named after it
	Title    string `json:"title"`
	Source   string `json:"source"` // who published it, where
	URL      string `json:"url,omitempty"`
	Date     string `json:"date"`
	Hardware string `json:"hardware"`
	// Columns and Rows are the original table's, in its order.
	Columns []string `json:"columns"`
	Rows    []string `json:"rows"`
	// Cells are the figures the report printed; a (row, column) the
	// report left empty has none.
	Cells []Cell `json:"cells"`
}

// Cell is one published figure.
type Cell struct {
	Row    string  `json:"row"`
	Column string  `json:"column"`
	Value  float64 `json:"value"`
	Unit   string  `json:"unit"`
	// Approx: the report gave the figure as "about" (~40 Gbit/s).
	Approx bool `json:"approx,omitempty"`
	// Low and High: the report printed one range for the row's columns
	// ("12.3–12.4 Gbit/s everywhere"), not each column's own figure, so
	// the cell keeps the range as printed and Value is its middle; a
	// shape between two such cells can only be "about even within the
	// range's width". Both zero: the cell's own figure.
	Low  float64 `json:"low,omitempty"`
	High float64 `json:"high,omitempty"`
	// Source, Date and Hardware are where the figure comes from; in the
	// file only where they differ from its report's (a figure from a
	// follow-up post), and Parse fills the others from the report, so
	// every figure carries its own.
	Source   string `json:"source,omitempty"`
	Date     string `json:"date,omitempty"`
	Hardware string `json:"hardware,omitempty"`
}

// OwnProvenance tells whether the figure comes from elsewhere than its
// report (its source, date or hardware differ), for a note beside it.
func (c Cell) OwnProvenance(r Report) bool {
	return c.Source != r.Source || c.Date != r.Date || c.Hardware != r.Hardware
}

// Ranged tells whether the cell holds a row's range, not its own figure.
func (c Cell) Ranged() bool { return c.Low != 0 || c.High != 0 }

// file is reports.json's shape.
type file struct {
	Reports []Report `json:"reports"`
}

// Parse reads and checks a reports file: every report named, sourced and
// dated, every cell on one of its report's rows and columns, once, with a
// finite value in a known unit. The error names the first fault.
func Parse(data []byte) ([]Report, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var f file
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("published reports: %w", err)
	}
	if len(f.Reports) == 0 {
		return nil, fmt.Errorf("published reports: no report")
	}
	ids := map[string]bool{}
	for i, r := range f.Reports {
		if err := r.check(); err != nil {
			return nil, fmt.Errorf("published report %q: %w", r.ID, err)
		}
		for j := range r.Cells {
			c := &f.Reports[i].Cells[j]
			c.Source, c.Date, c.Hardware = or(c.Source, r.Source), or(c.Date, r.Date), or(c.Hardware, r.Hardware)
		}
		if ids[r.ID] {
			return nil, fmt.Errorf("published report %q: listed twice", r.ID)
		}
		ids[r.ID] = true
	}
	return f.Reports, nil
}

// check validates one report.
func (r Report) check() error {
	for _, f := range []struct{ name, v string }{{"id", r.ID}, {"title", r.Title}, {"source", r.Source}, {"date", r.Date}, {"hardware", r.Hardware}} {
		if strings.TrimSpace(f.v) == "" {
			return fmt.Errorf("no %s", f.name)
		}
	}
	rows, err := names("row", r.Rows)
	if err != nil {
		return err
	}
	cols, err := names("column", r.Columns)
	if err != nil {
		return err
	}
	seen := map[[2]string]bool{}
	for _, c := range r.Cells {
		switch {
		case !rows[c.Row]:
			return fmt.Errorf("cell on unknown row %q", c.Row)
		case !cols[c.Column]:
			return fmt.Errorf("cell %q on unknown column %q", c.Row, c.Column)
		case seen[[2]string{c.Row, c.Column}]:
			return fmt.Errorf("cell %q / %q given twice", c.Row, c.Column)
		case math.IsNaN(c.Value) || math.IsInf(c.Value, 0):
			return fmt.Errorf("cell %q / %q: value is not a number", c.Row, c.Column)
		case c.Ranged() && !(c.Low <= c.Value && c.Value <= c.High && c.Low < c.High):
			return fmt.Errorf("cell %q / %q: range %g–%g does not hold its value %g", c.Row, c.Column, c.Low, c.High, c.Value)
		case !KnownUnit(c.Unit):
			return fmt.Errorf("cell %q / %q: unknown unit %q (known: %s)", c.Row, c.Column, c.Unit, strings.Join(unitNames(), ", "))
		}
		seen[[2]string{c.Row, c.Column}] = true
	}
	return nil
}

// or is s, or else when s is empty.
func or(s, otherwise string) string {
	if strings.TrimSpace(s) == "" {
		return otherwise
	}
	return s
}

// names checks a list of row or column names: some, none empty, none twice.
func names(what string, list []string) (map[string]bool, error) {
	if len(list) == 0 {
		return nil, fmt.Errorf("no %ss", what)
	}
	set := map[string]bool{}
	for _, n := range list {
		switch {
		case strings.TrimSpace(n) == "":
			return nil, fmt.Errorf("an empty %s name", what)
		case set[n]:
			return nil, fmt.Errorf("%s %q listed twice", what, n)
		}
		set[n] = true
	}
	return set, nil
}

// embedded is reports.json parsed once.
var embedded = sync.OnceValues(func() ([]Report, error) { return Parse(reportsJSON) })

// All are the embedded reports, in the file's order.
func All() ([]Report, error) { return embedded() }

// Lookup finds an embedded report by id.
func Lookup(id string) (Report, error) {
	all, err := All()
	if err != nil {
		return Report{}, err
	}
	var ids []string
	for _, r := range all {
		if r.ID == id {
			return r, nil
		}
		ids = append(ids, r.ID)
	}
	return Report{}, fmt.Errorf("no published report %q (known: %s)", id, strings.Join(ids, ", "))
}

// Cell is the published figure at row and column; false where the
// report printed none.
func (r Report) Cell(row, column string) (Cell, bool) {
	for _, c := range r.Cells {
		if c.Row == row && c.Column == column {
			return c, true
		}
	}
	return Cell{}, false
}

// HasRow and HasColumn tell whether the report's table has them.
func (r Report) HasRow(row string) bool       { return contains(r.Rows, row) }
func (r Report) HasColumn(column string) bool { return contains(r.Columns, column) }

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
