package stats

import "fmt"

// Rounds until the answer is clear: a run may add interleaved rounds after
// the fifth until its questions are conclusive. Looking at the data after
// every round and stopping when it looks clear would call identical
// scenarios different far more often than 5% (each look is another chance),
// so every look tests at a stricter level, the same at each look (Pocock's
// design): the per-look level at which the chance that any look from round
// 5 to MAX calls a null effect significant is 5%. For the paired t-test of
// normal log ratios that chance does not depend on their spread, so the
// level depends on MAX alone; sequentialAlpha holds it for MAX = 5..40,
// computed from 400,000 simulated null runs (TestSequentialAlphaTable
// checks it again on 40,000).

// MinAutoRounds and MaxAutoRounds bound the MAX of --rounds auto:MAX.
const (
	MinAutoRounds = DefaultMinRounds
	MaxAutoRounds = 40
)

// sequentialAlpha[max-5] is the per-look two-sided level for looks after
// every round from 5 to max.
var sequentialAlpha = []float64{
	0.04986, 0.03412, 0.02665, 0.02241, 0.01955, 0.01744, 0.01587, 0.01464, 0.01364, 0.01279, // 5..14
	0.01211, 0.01155, 0.01102, 0.01056, 0.01019, 0.00982, 0.00954, 0.00928, 0.00900, 0.00876, // 15..24
	0.00854, 0.00832, 0.00811, 0.00794, 0.00779, 0.00763, 0.00749, 0.00737, 0.00726, 0.00713, // 25..34
	0.00703, 0.00692, 0.00682, 0.00673, 0.00664, 0.00657, // 35..40
}

// SequentialLevel is the confidence level of each look of a run that may
// stop after any round from 5 to max, for an overall 5% chance of a false
// verdict: 1 − 0.0121 at max 15.
func SequentialLevel(max int) (float64, error) {
	if max < MinAutoRounds || max > MaxAutoRounds {
		return 0, fmt.Errorf("rounds auto:%d: the most rounds must be %d to %d", max, MinAutoRounds, MaxAutoRounds)
	}
	return 1 - sequentialAlpha[max-MinAutoRounds], nil
}

// Conclusive says whether a verdict settles its question: the interval
// lies beyond the minimum effect (a difference that matters) or wholly
// inside it (none that does).
func Conclusive(v Verdict, minEffectPct float64) bool {
	if v.Significant {
		return true
	}
	if !v.Tested {
		return false // no interval: too few rounds
	}
	if minEffectPct == 0 {
		minEffectPct = DefaultMinEffectPct
	}
	return v.Lo >= -minEffectPct && v.Hi <= minEffectPct
}
