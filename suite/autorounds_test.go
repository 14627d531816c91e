package suite

import (
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/cnibench/cnibench/stats"
)

// simulatedAuto runs the --rounds auto rule (autoDone's: the paired
// verdict at the sequential level after every round from the fifth,
// stopping once it is conclusive) on one synthetic question: rounds share
// the machine's state (30% of rounds 20–80% slower for both sides) and
// each value has its own ±5% noise; b is truth × a. It returns the
// rounds taken and the final verdict.
func simulatedAuto(rng *rand.Rand, truth float64, max int) (int, stats.Verdict) {
	level, err := stats.SequentialLevel(max)
	if err != nil {
		panic(err)
	}
	var a, b []float64
	var v stats.Verdict
	for round := 1; round <= max; round++ {
		load := 1.0
		if rng.Float64() < 0.3 {
			load = 1 / (1.2 + 0.6*rng.Float64())
		}
		a = append(a, 1000*load*(1+(rng.Float64()*2-1)*0.05))
		b = append(b, 1000*truth*load*(1+(rng.Float64()*2-1)*0.05))
		if round < stats.MinAutoRounds {
			continue
		}
		v = stats.ComparePaired(a, b, stats.CompareOptions{HigherIsBetter: true, Level: level})
		if stats.Conclusive(v, 0) {
			return round, v
		}
	}
	return max, v
}

// --rounds auto:15 holds its error rate: over 20,000 simulated runs of
// identical scenarios, at most 5% end with a significant verdict; and it
// reports, for true effects of 0, +3, +5 and +10%, how often the answer is
// right and how many rounds it needed (docs/report.md quotes them).
func TestAutoRoundsErrorRate(t *testing.T) {
	const runs, max = 20000, 15
	for _, truth := range []float64{1, 1.03, 1.05, 1.10} {
		rng := rand.New(rand.NewPCG(15, uint64(truth*1000)))
		var wrong, found, conclusive int
		var rounds []int
		for range runs {
			n, v := simulatedAuto(rng, truth, max)
			rounds = append(rounds, n)
			if stats.Conclusive(v, 0) {
				conclusive++
			}
			switch {
			case v.Significant && (truth == 1 || v.Better == "a"):
				wrong++
			case v.Significant:
				found++
			}
		}
		sort.Ints(rounds)
		mean := 0.0
		for _, n := range rounds {
			mean += float64(n)
		}
		mean /= runs
		t.Logf("true effect %+.0f%%: wrong verdicts %.2f%%, effect found %.1f%%, conclusive %.1f%%, rounds median %d (mean %.1f, p90 %d)",
			100*(truth-1), 100*float64(wrong)/runs, 100*float64(found)/runs, 100*float64(conclusive)/runs,
			rounds[runs/2], mean, rounds[runs*9/10])
		if rate := float64(wrong) / runs; rate > 0.05 {
			t.Errorf("true effect %+.0f%%: %.2f%% wrong verdicts, want ≤ 5%%", 100*(truth-1), 100*rate)
		}
	}
}
