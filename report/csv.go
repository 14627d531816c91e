package report

import (
	"encoding/csv"
	"io"
	"strconv"
)

// csvHead names the columns of CSV: one row per column (run × scenario) ×
// section (test × placement) × metric, with the cell and its verdict
// against the column it is compared with, as the tables show them.
var csvHead = []string{"run", "scenario", "test", "placement", "metric", "unit", "better", "headline",
	"n", "median", "ci_lo", "ci_hi", "ci_coverage", "left_out",
	"compared_with", "delta_pct", "delta_ci_lo_pct", "delta_ci_hi_pct", "p", "verdict"}

// CSV writes the report's cells for spreadsheets and scripts.
func CSV(w io.Writer, rep *Report) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(csvHead); err != nil {
		return err
	}
	for _, sec := range rep.Sections {
		for _, row := range sec.Metrics {
			for ci, col := range rep.Columns {
				v := row.Values[ci]
				if v == nil {
					continue
				}
				rec := []string{col.RunID, col.Label, sec.Test, sec.Placement, row.Metric, row.Unit, row.Better, strconv.FormatBool(row.Headline),
					strconv.Itoa(v.N), csvNum(v.Display), csvNum(v.Lo), csvNum(v.Hi), csvNum(v.Coverage), v.LeftOut}
				if d := row.VsBaseline[ci]; d != nil {
					rec = append(rec, rep.Columns[col.Against].Label, csvNum(d.DeltaPct), csvNum(d.Lo), csvNum(d.Hi), csvNum(d.P), d.Verdict)
				} else {
					rec = append(rec, "", "", "", "", "", "")
				}
				if err := cw.Write(rec); err != nil {
					return err
				}
			}
		}
	}
	cw.Flush()
	return cw.Error()
}

// csvNum prints a number as JSON does (6 significant digits), empty when
// not finite.
func csvNum(n Num) string {
	b, _ := n.MarshalJSON()
	if string(b) == "null" {
		return ""
	}
	return string(b)
}
