package results

// Reproduction lays a run out as a published report's table (package
// published holds the report's figures): which of our measurements stands
// for each of the original's cells, and the shapes — ratios between two
// cells that carry over between machines, unlike absolute numbers. A
// profile named after a report carries one; its run records it in
// Plan.Reproduces so that the report is built from results alone.
type Reproduction struct {
	Report string `json:"report"` // the published report's id
	// Cells are the original's cells we map, in its order (rows, then
	// columns within a row).
	Cells []ReproducedCell `json:"cells"`
	// Shapes are judged with the run's paired statistics.
	Shapes []Shape `json:"shapes,omitempty"`
}

// ReproducedCell is one of the original's cells and our measurement of
// it; NoEquivalent says why we have none (then Test… are empty).
type ReproducedCell struct {
	Row       string `json:"row"`
	Column    string `json:"column"`
	Test      string `json:"test,omitempty"`
	Placement string `json:"placement,omitempty"`
	// Scenario is the run's scenario; "" is the run's first (a run of one
	// scenario, as a cluster is).
	Scenario     string `json:"scenario,omitempty"`
	Metric       string `json:"metric,omitempty"`
	NoEquivalent string `json:"no_equivalent,omitempty"`
	// Change: the published figure is a change in % (an added part's
	// overhead, "L7 policy −86.1%"), so ours is Scenario against the
	// scenario its column is compared with (the same datapath without the
	// part), round by round, not Scenario's value.
	Change bool `json:"change,omitempty"`
	// Services: the cell is measured at this many dummy Services, a step
	// of the sweep that follows the rounds (Sweep.AfterRounds); 0: none.
	Services int `json:"services,omitempty"`
}

// MetricMapMemory is a cell's metric when it is the BPF maps' memory of
// the cell's scenario at its sweep step (SweepStep memory, the memlock
// the kernel charges for the datapath's maps): one reading, no rounds.
const MetricMapMemory = "BPF map memory"

// Shape is "B against A" for two of the original's cells: two scenarios
// of one measurement (eBPF ÷ iptables), or two measurements of one
// scenario (32 streams ÷ 1), paired round by round either way.
type Shape struct {
	Ask string  `json:"ask"`
	A   CellRef `json:"a"`
	B   CellRef `json:"b"`
	// EvenWithinPct: a published ratio within ±EvenWithinPct of 1 is the
	// shape "about even" (one round of the original cannot tell less).
	EvenWithinPct float64 `json:"even_within_pct"`
	// Reciprocal: our metric is the inverse of the published one (CPU per
	// request here, queries per core there), so the published ratio is
	// judged inverted: the same shape, read in our metric.
	Reciprocal bool `json:"reciprocal,omitempty"`
	// Change: A is one cell whose published figure is a change in %
	// (ReproducedCell.Change) and B is unused; the published ratio is
	// 1 + change/100, ours the cell's column against the one it is
	// compared with.
	Change bool `json:"change,omitempty"`
}

// CellRef names one of the original's cells.
type CellRef struct {
	Row    string `json:"row"`
	Column string `json:"column"`
}
