package report

import (
	"fmt"
	"math"
	"sort"

	"github.com/cnibench/cnibench/results"
)

// Noise the reader should know before reading a number: how busy the
// machine was (lab runs record steal and load per sample) and how many
// verdicts could not say anything.

// hostWarnings flags runs whose samples met a busy hypervisor (steal over
// 5% of CPU time) or a loaded machine (load above twice its CPUs).
func hostWarnings(rep *Report, in []Input) []string {
	var out []string
	for ri, input := range in {
		var steals, loads, own, other []float64
		stolen, loaded := 0, 0
		for _, r := range input.Run.Results {
			for _, s := range r.Samples {
				if s.Host == nil {
					continue
				}
				steals, loads = append(steals, s.Host.StealPct), append(loads, s.Host.Load1)
				if s.Host.StealPct > 5 {
					stolen++
				}
				if cpus := input.Run.Environment.CPUCount; cpus > 0 && s.Host.Load1 > 2*float64(cpus) {
					loaded++
					if s.Host.BusyCores > 0 {
						own, other = append(own, s.Host.OwnCores), append(other, s.Host.OtherCores())
					}
				}
			}
		}
		label := rep.Runs[ri].Label
		if stolen > 0 {
			out = append(out, fmt.Sprintf("run %s: the hypervisor took over 5%% of CPU time (steal) in %d of %d samples, up to %.0f%%: its numbers are noisier than the machine; prefer a quiet host",
				label, stolen, len(steals), maxOf(steals)))
		}
		if loaded > 0 {
			out = append(out, loadWarning(label, input.Run.Environment.CPUCount, loaded, len(loads), results.Median(loads), own, other))
		}
	}
	return out
}

func maxOf(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s[len(s)-1]
}

// inconclusiveWarning says how many verdicts were too wide to say
// anything, when any were.
func inconclusiveWarning(rep *Report) string {
	n, total := 0, 0
	for _, sec := range rep.Sections {
		for _, row := range sec.Metrics {
			for _, d := range row.VsBaseline {
				if d == nil || math.IsNaN(float64(d.P)) {
					continue
				}
				total++
				if d.Verdict == VerdictInconclusive {
					n++
				}
			}
		}
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("%d of the %d comparisons against the baseline are inconclusive (their intervals reach beyond ±10%% without excluding no change): more rounds, or a quieter machine, would sharpen them",
		n, total)
}

// loadWarning says how often the load average was high and whose load it
// was: the benchmark's own processes (its agents, proxies, daemons,
// consumers: nothing to fix) or other work beside it (a noisier run), as
// the samples' busy and own cores tell (results.HostLoad).
func loadWarning(label string, cpus, loaded, samples int, load float64, own, other []float64) string {
	head := fmt.Sprintf("run %s: the load average exceeded twice the %d CPUs in %d of %d samples (median %.1f)", label, cpus, loaded, samples, load)
	if len(own) == 0 {
		return head + ": other work ran beside the benchmark, or the benchmark's own processes queued (not recorded in these results)"
	}
	o, x := results.Median(own), results.Median(other)
	whose := "mostly the benchmark's own processes (its agents, proxies, daemons and consumers), not other work"
	if x >= 0.25*float64(cpus) {
		whose = "other work ran beside the benchmark (or kernel work its processes were not charged for): its numbers are noisier than the machine's; prefer a quiet host"
	}
	return fmt.Sprintf("%s; in those samples the benchmark's own processes kept a median of %.2f cores busy and everything else %.2f: %s", head, o, x, whose)
}
