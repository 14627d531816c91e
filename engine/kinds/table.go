package kinds

// Table is a kind's terminal table in reports: one row per test,
// placement and scenario, with these columns after Test, Placement and
// Samples. Order places it among the kinds' tables (lower first).
type Table struct {
	Order   int
	Columns []Column
}

// Column is one column of a terminal table: a metric's displayed value in
// Format, the sum-like pair "Metric+Plus" (client+server CPU), or a
// Special column.
type Column struct {
	Head    string
	Metric  string
	Plus    string
	Format  string
	Special string
}

// Special columns, filled by the report from the section itself.
const (
	ColumnStreams = "streams" // flows per sample
	ColumnFlags   = "flags"   // missed target rate, client saturated
)
