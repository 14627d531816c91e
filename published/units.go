package published

import "sort"

// A published figure is compared with ours in our unit: units of one
// dimension convert by a factor (Gbit/s and Mbit/s, µs and ms); rates of
// things per second are one dimension whatever the things are called
// (netperf's trans/s, our conn/s, fortio's req/s).
type unit struct {
	dim    string
	factor float64 // in the dimension's base unit
}

var units = map[string]unit{
	"Gbit/s":    {"bits/s", 1e9},
	"Mbit/s":    {"bits/s", 1e6},
	"µs":        {"time", 1},
	"ms":        {"time", 1e3},
	"s":         {"time", 1e6},
	"trans/s":   {"per second", 1},
	"conn/s":    {"per second", 1},
	"req/s":     {"per second", 1},
	"queries/s": {"per second", 1},
	"%":         {"percent", 1},
	"MB":        {"bytes", 1e6},
	"MiB":       {"bytes", 1 << 20},
	// The Istio report's queries per core: a rate per core kept busy,
	// comparable only with another of its kind.
	"queries/s per core": {"per second per core", 1},
}

// KnownUnit tells whether a unit is one Convert knows.
func KnownUnit(u string) bool { _, ok := units[u]; return ok }

// Convert expresses v, in unit from, in unit to; false when the two are
// not of one dimension (or either is unknown).
func Convert(v float64, from, to string) (float64, bool) {
	f, okf := units[from]
	t, okt := units[to]
	if !okf || !okt || f.dim != t.dim {
		return 0, false
	}
	return v * f.factor / t.factor, true
}

func unitNames() []string {
	var out []string
	for u := range units {
		out = append(out, u)
	}
	sort.Strings(out)
	return out
}
