package suite

import (
	"os"
	"strconv"
	"strings"

	"github.com/cnibench/cnibench/results"
)

// cpuTimes is /proc/stat's aggregate cpu line: the total and the steal
// ticks.
type cpuTimes struct{ total, steal float64 }

// readCPUTimes reads the aggregate cpu line of /proc/stat; ok is false
// where it cannot be read (then no host load is recorded).
func readCPUTimes() (cpuTimes, bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return cpuTimes{}, false
	}
	return parseCPUTimes(string(b))
}

// parseCPUTimes reads the aggregate cpu line of a /proc/stat text.
func parseCPUTimes(stat string) (cpuTimes, bool) {
	line, _, _ := strings.Cut(stat, "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return cpuTimes{}, false
	}
	var t cpuTimes
	for i, s := range f[1:] {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return cpuTimes{}, false
		}
		// user nice system idle iowait irq softirq steal guest guest_nice:
		// guest time is already counted in user and nice.
		if i < 8 {
			t.total += v
		}
		if i == 7 {
			t.steal = v
		}
	}
	return t, true
}

// hostLoad is the machine's load between two /proc/stat readings.
func hostLoad(before, after cpuTimes) *results.HostLoad {
	h := &results.HostLoad{}
	if d := after.total - before.total; d > 0 {
		h.StealPct = 100 * (after.steal - before.steal) / d
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(b)); len(f) > 0 {
			h.Load1, _ = strconv.ParseFloat(f[0], 64)
		}
	}
	return h
}
