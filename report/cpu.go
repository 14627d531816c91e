package report

import (
	"fmt"

	"github.com/cnibench/cnibench/engine/kinds"
)

// cpuLines says, per column of a section, where the CPU of a unit of work
// went on the CPUs the agents were pinned to (results.PinnedCPU): the
// client's and server's cgroups, what no endpoint was charged for, and
// how much of it all was softirq and irq. Medians of the per-round values,
// so the parts need not add up exactly. nil when the section has no
// pinned-CPU rows (a cluster run, or results from before they existed).
func cpuLines(sec Section, cols []Column) []string {
	k, ok := kinds.Lookup(sec.Kind)
	if !ok || k.PerWork.Client == "" {
		return nil
	}
	pw := k.PerWork
	rows := map[string]Row{}
	for _, r := range sec.Metrics {
		rows[r.Metric] = r
	}
	total, ok := rows[pw.Pinned(kinds.PinnedTotal)]
	if !ok {
		return nil
	}
	median := func(name string, ci int) (float64, bool) {
		r, ok := rows[name]
		if !ok || ci >= len(r.Values) || r.Values[ci] == nil {
			return 0, false
		}
		return float64(r.Values[ci].Median), true
	}
	unit, per := pw.Unit, pw.Client[len("client CPU "):] // "per op"
	var out []string
	for ci, c := range cols {
		t, ok1 := median(total.Metric, ci)
		cl, ok2 := median(pw.Client, ci)
		sv, ok3 := median(pw.Server, ci)
		un, ok4 := median(pw.Pinned(kinds.PinnedUnattributed), ci)
		sq, ok5 := median(pw.Pinned(kinds.PinnedSoftirq), ci)
		if !(ok1 && ok2 && ok3 && ok4 && ok5) || t <= 0 {
			continue
		}
		// The lab's datapath processes (L7 proxies and WireGuard daemons,
		// pinned with the agents; flow consumers, in the cnibench process,
		// not) are charged to no endpoint: say what they used, wherever.
		dp := ""
		if d, ok := median(pw.Datapath, ci); ok && pw.Datapath != "" && d > 0 {
			dp = fmt.Sprintf("; the datapath's processes (proxies, WireGuard daemons, flow consumers) used %.3g, on these CPUs or others", d)
		}
		out = append(out, fmt.Sprintf("%s: %.3g %s %s on the agents' CPUs = client %.3g + server %.3g + %.3g charged to no endpoint "+
			"(softirq in the idle task or ksoftirqd, kworkers, anything else on those CPUs); softirq and irq were %.3g of it (%.0f%%), whoever was charged%s",
			c.Label, t, unit, per, cl, sv, un, sq, 100*sq/t, dp))
	}
	return out
}
