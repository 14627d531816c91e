package report

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/cnibench/cnibench/results"
	"github.com/cnibench/cnibench/stats"
)

// How two columns are judged: a column against its baseline (Delta),
// the best column against the runner-up (Winner).

// Verdict kinds.
const (
	VerdictSignificant = "significant"
	VerdictNoise       = "within noise"
	// VerdictInconclusive: not significant, and the interval too wide to
	// bound the difference (more rounds needed).
	VerdictInconclusive = "inconclusive"
	VerdictTooFew       = "not enough rounds"
	// VerdictDemoted: significant alone, but not once the report's
	// false-discovery control holds it with the others: no difference is
	// shown, and none is ruled out either (it is not "within noise").
	VerdictDemoted = "not significant after correction"
	VerdictNA      = "n/a"
)

// Delta is a column's verdict against the baseline.
type Delta struct {
	Verdict  string `json:"verdict"`
	DeltaPct Num    `json:"delta_pct"` // of the compared values (for loss: of the delivered share)
	Lo       Num    `json:"ci_lo_pct"` // null when unbounded
	Hi       Num    `json:"ci_hi_pct"`
	NoisePct Num    `json:"noise_pct"`
	Coverage Num    `json:"ci_coverage"` // the interval's confidence (exact methods: not always 95%)
	Better   bool   `json:"better"`      // significant and better than the baseline
	Worse    bool   `json:"worse"`       // significant and worse
	P        Num    `json:"p"`           // two-sided p-value; null without a test
	Text     string `json:"text"`
}

// Winner is the verdict of the best column against the runner-up.
type Winner struct {
	Verdict  string `json:"verdict"`
	Label    string `json:"label,omitempty"` // set only when significant
	Best     string `json:"best,omitempty"`  // best median, winner or not
	RunnerUp string `json:"runner_up,omitempty"`
	DeltaPct Num    `json:"delta_pct"`
	Lo       Num    `json:"ci_lo_pct"`
	Hi       Num    `json:"ci_hi_pct"`
	NoisePct Num    `json:"noise_pct"`
	Coverage Num    `json:"ci_coverage"`
	P        Num    `json:"p"` // two-sided p-value; null without a test
	Text     string `json:"text"`
	// AsAsked: the row compares the columns of a question, and Best and
	// RunnerUp are the question's b and a, DeltaPct b against a, whichever
	// median is better.
	AsAsked bool `json:"as_asked,omitempty"`
	// pair is the two columns compared (runner-up, best; a, b as asked).
	pair [2]int
}

// compare judges b against baseline a on what the metric compares.
// Columns of one interleaved run (paired) are compared round by round:
// each round's ratio, in which what the machine did that round cancels
// (stats.ComparePaired); columns of separate runs, or steps of a sweep, by
// ranks (stats.CompareUnpaired).
func compare(a, b *results.Metric, opt Options, paired bool) stats.Verdict {
	va, higher, noun := a.ComparedValues()
	vb, _, _ := b.ComparedValues()
	co := stats.CompareOptions{HigherIsBetter: higher, Noun: noun,
		MinEffectPct: opt.MinEffectPct, MinSamples: opt.MinSamples, Level: opt.Level}
	if !paired {
		return stats.CompareUnpaired(va, vb, co)
	}
	pa, pb := byRound(va, a.Rounds, vb, b.Rounds)
	return stats.ComparePaired(pa, pb, co)
}

// byRound aligns two metrics' values by round: the rounds both have, in
// order (a round one side lacks, failed or missing, is left out).
func byRound(va []float64, ra []int, vb []float64, rb []int) (pa, pb []float64) {
	at := map[int]float64{}
	for i, r := range rb {
		if i < len(vb) {
			at[r] = vb[i]
		}
	}
	for i, r := range ra {
		if y, ok := at[r]; ok && i < len(va) {
			pa, pb = append(pa, va[i]), append(pb, y)
		}
	}
	return pa, pb
}

// kindOf classifies a verdict.
func kindOf(v stats.Verdict, _ Options) string {
	switch {
	case v.Significant:
		return VerdictSignificant
	case strings.HasPrefix(v.Text, "not enough"):
		return VerdictTooFew
	case strings.HasPrefix(v.Text, "n/a"):
		return VerdictNA
	case v.Inconclusive:
		return VerdictInconclusive
	}
	return VerdictNoise
}

func tooFewText(v stats.Verdict) string {
	return fmt.Sprintf("not enough rounds for a verdict (n=%d)", v.N)
}

func delta(base, m *results.Metric, opt Options, paired bool) *Delta {
	v := compare(base, m, opt, paired)
	d := &Delta{Verdict: kindOf(v, opt), DeltaPct: Num(v.DeltaPct), Lo: Num(v.Lo), Hi: Num(v.Hi), NoisePct: Num(v.NoisePct),
		Coverage: Num(v.Coverage), P: tested(v, opt)}
	switch d.Verdict {
	case VerdictSignificant:
		d.Better, d.Worse = v.Better == "b", v.Better == "a"
		d.Text = strings.TrimPrefix(v.Text, "b is ")
	case VerdictTooFew:
		d.Text = tooFewText(v)
	default:
		d.Text = v.Text
	}
	return d
}

// winner compares the best column (by median of the compared values) with
// the runner-up.
func winner(ms []*results.Metric, cols []Column, opt Options) *Winner {
	type cand struct {
		i   int
		med float64
	}
	var cs []cand
	higher := false
	for i, m := range ms {
		if m == nil {
			continue
		}
		vals, h, _ := m.ComparedValues()
		higher = h
		cs = append(cs, cand{i, results.Median(vals)})
	}
	if len(cs) < 2 {
		return &Winner{Verdict: VerdictNA, Text: "n/a (fewer than two columns have it)"}
	}
	sort.SliceStable(cs, func(a, b int) bool {
		if higher {
			return cs[a].med > cs[b].med
		}
		return cs[a].med < cs[b].med
	})
	best, second := cs[0].i, cs[1].i
	v := compare(ms[second], ms[best], opt, cols[second].Run == cols[best].Run)
	if v.DeltaPct != 0 && (v.DeltaPct > 0) != higher && !math.IsNaN(v.DeltaPct) {
		// The comparison's own estimate favours the runner-up (its medians
		// and the tested estimate disagree in order): the verdict decides
		// who is named, never the other way round.
		best, second = second, best
		v = compare(ms[second], ms[best], opt, cols[second].Run == cols[best].Run)
	}
	v.Text = nameSides(v.Text, cols[second].Label, cols[best].Label)
	w := &Winner{pair: [2]int{second, best}, Verdict: kindOf(v, opt), Best: cols[best].Label, RunnerUp: cols[second].Label,
		DeltaPct: Num(v.DeltaPct), Lo: Num(v.Lo), Hi: Num(v.Hi), NoisePct: Num(v.NoisePct), Coverage: Num(v.Coverage), P: tested(v, opt)}
	switch w.Verdict {
	case VerdictSignificant:
		w.Label = cols[best].Label
		// "b is 5.1% higher throughput (significant, ...)" → "native: 5.1%
		// higher throughput than vxlan (significant, ...)".
		body := strings.TrimPrefix(v.Text, "b is ")
		if i := strings.Index(body, " ("); i >= 0 {
			body = body[:i] + " than " + cols[second].Label + body[i:]
		}
		w.Text = cols[best].Label + ": " + body
	case VerdictTooFew:
		w.Text = tooFewText(v)
	default:
		// Not significant: name the two columns, so the sign of the
		// difference (best against runner-up) reads right.
		w.Text = cols[best].Label + " vs " + cols[second].Label + ": " + strings.Replace(v.Text, "(b is ", "("+cols[best].Label+" is ", 1)
	}
	return w
}

// nameSides puts the columns' labels into a verdict's notes on the sides
// ("b delivered nothing in 2 of 7 rounds" → "vxlan delivered …").
func nameSides(text, a, b string) string {
	text = strings.ReplaceAll(text, "; a delivered nothing", "; "+a+" delivered nothing")
	text = strings.ReplaceAll(text, ", b delivered nothing", ", "+b+" delivered nothing")
	return strings.ReplaceAll(text, "; b delivered nothing", "; "+b+" delivered nothing")
}
