package report

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/cnibench/cnibench/stats"
)

// FDR says how the report's verdicts were held together: a standard
// profile judges hundreds of metrics, and at 5% each identical code would
// show dozens of "significant" lines. Every tested comparison (each column
// against the one it is compared with, each winner that is not already
// one of those, each sweep step against step 0, each step of a crossover
// claim) joins one Benjamini–Hochberg family, once; a significant verdict
// stays significant only if it is a discovery of that family. The
// p-values are those of the minimum-effect test (stats: the null is "no
// change beyond the minimum effect"), so real but negligible differences
// are not discoveries that would let noise through beside them.
type FDR struct {
	// Family is "questions" (the profile's questions, held among
	// themselves), "exploratory" (every other comparison of a report
	// with questions) or "" (all of a report without questions).
	Family      string  `json:"family,omitempty"`
	Level       float64 `json:"level"`       // the false-discovery rate held (0.05)
	Comparisons int     `json:"comparisons"` // verdicts with a test in the family
	Significant int     `json:"significant"` // significant after the control
	Demoted     int     `json:"demoted"`     // significant alone, not after the control
}

// ExpectedFalse is how many of the significant verdicts may be false, at
// most, on average.
func (f *FDR) ExpectedFalse() float64 { return f.Level * float64(f.Significant) }

// Sentence is the report's one-line account of the control.
func (f *FDR) Sentence() string {
	if f == nil || f.Comparisons == 0 {
		return ""
	}
	what := "comparisons judged"
	switch f.Family {
	case familyQuestions:
		what = "questions, held among themselves"
	case familyExploratory:
		what = "other comparisons judged (exploratory, a family of their own)"
	}
	s := fmt.Sprintf("%d %s; %d significant with the false-discovery rate held at %g%% (Benjamini–Hochberg), so about %.1f of them may be false",
		f.Comparisons, what, f.Significant, 100*f.Level, f.ExpectedFalse())
	if f.Demoted > 0 {
		s += fmt.Sprintf("; %d more looked significant alone and are not counted", f.Demoted)
	}
	return s + "."
}

// The families of a report with questions.
const (
	familyQuestions   = "questions"
	familyExploratory = "exploratory"
)

// verdictRef is one comparison of the family, however many places show
// it (a two-column row's winner is its vs-baseline verdict again).
type verdictRef struct {
	p       float64
	sig     bool
	demotes []func(why string) // called when a significant verdict is no discovery
}

// family collects a report's tested comparisons, each once.
type family struct {
	name  string
	refs  []*verdictRef
	byKey map[string]*verdictRef
}

func newFamily(name string) *family { return &family{name: name, byKey: map[string]*verdictRef{}} }

// why says why a verdict of the family is not significant after all.
func (f *family) why() string {
	switch f.name {
	case familyQuestions:
		return fmt.Sprintf("not significant after correcting for %d questions", len(f.refs))
	case familyExploratory:
		return fmt.Sprintf("not significant once the report's %d exploratory comparisons are held to a 5%% false-discovery rate", len(f.refs))
	}
	return fmt.Sprintf("not significant once the report's %d comparisons are held to a 5%% false-discovery rate", len(f.refs))
}

// add puts a comparison in the family; a second add with the same
// non-empty key is the same comparison shown elsewhere.
func (f *family) add(key string, p float64, sig bool, demote func(why string)) {
	if math.IsNaN(p) {
		return
	}
	if key != "" {
		if r, ok := f.byKey[key]; ok {
			r.demotes = append(r.demotes, demote)
			return
		}
	}
	r := &verdictRef{p: p, sig: sig, demotes: []func(string){demote}}
	f.refs = append(f.refs, r)
	if key != "" {
		f.byKey[key] = r
	}
}

// control applies Benjamini–Hochberg at level q to the family, demotes
// the significant verdicts that are no discovery, and counts.
func (f *family) control(q float64) *FDR {
	out := &FDR{Family: f.name, Level: q, Comparisons: len(f.refs)}
	ps := make([]float64, len(f.refs))
	for i, r := range f.refs {
		ps[i] = r.p
	}
	for i, disc := range stats.BenjaminiHochberg(ps, q) {
		switch r := f.refs[i]; {
		case r.sig && disc:
			out.Significant++
		case r.sig:
			out.Demoted++
			for _, d := range r.demotes {
				d(f.why())
			}
		}
	}
	return out
}

// pairKey names a comparison of two columns in one row, either way round.
func pairKey(si, ri, a, b int) string {
	return fmt.Sprintf("%d/%d/%d-%d", si, ri, min(a, b), max(a, b))
}

// controlFDR applies Benjamini–Hochberg to every tested verdict of rep:
// the comparisons named by questions (pairKey) in a family of their own,
// every other in another; without questions, all in one.
func controlFDR(rep *Report, questions map[string]bool) {
	all := newFamily("")
	prim, explo := all, all
	if len(questions) > 0 {
		prim, explo = newFamily(familyQuestions), newFamily(familyExploratory)
	}
	pick := func(key string) *family {
		if questions[key] {
			return prim
		}
		return explo
	}
	addDelta := func(key string, d *Delta) {
		if d == nil {
			return
		}
		pick(key).add(key, float64(d.P), d.Verdict == VerdictSignificant, func(why string) {
			d.Verdict, d.Better, d.Worse = VerdictDemoted, false, false
			d.Text = demotedText(d.Text, why, float64(d.P))
		})
	}
	for si := range rep.Sections {
		for ri := range rep.Sections[si].Metrics {
			row := &rep.Sections[si].Metrics[ri]
			for ci, d := range row.VsBaseline {
				if d != nil && ci < len(rep.Columns) {
					addDelta(pairKey(si, ri, ci, rep.Columns[ci].Against), d)
				} else {
					addDelta("", d)
				}
			}
			if w := row.Winner; w != nil {
				key := ""
				if w.pair[0] != w.pair[1] {
					key = pairKey(si, ri, w.pair[0], w.pair[1])
				}
				pick(key).add(key, float64(w.P), w.Verdict == VerdictSignificant, func(why string) {
					prefix := ""
					if strings.HasPrefix(w.Text, "control: ") {
						prefix = "control: "
					}
					w.Verdict, w.Label = VerdictDemoted, ""
					body := strings.TrimPrefix(strings.TrimPrefix(w.Text, prefix), w.Best+": ")
					w.Text = prefix + w.Best + " vs " + w.RunnerUp + ": " + w.Best + " " + demotedText(body, why, float64(w.P))
				})
			}
		}
	}
	if ss := rep.ServiceScale; ss != nil {
		addServiceScale(rep, ss, pick, addDelta)
	}
	for _, d := range reproducedDeltas(rep) {
		addDelta("", d) // a shape between two measurements of one scenario
	}
	if prim != explo {
		rep.QuestionsFDR = prim.control(stats.DefaultFDR)
	}
	rep.FDR = explo.control(stats.DefaultFDR)
	if ss := rep.ServiceScale; ss != nil {
		for ci, c := range ss.Crossovers {
			if c.pts == nil {
				continue
			}
			nc := crossoverText(ss.Datapaths[c.a], ss.Datapaths[c.b], c.pts)
			nc.pts, nc.a, nc.b = c.pts, c.a, c.b
			ss.Crossovers[ci] = nc
		}
	}
}

// addServiceScale puts a sweep's tests in their families: each step
// against step 0, and each crossover point.
func addServiceScale(rep *Report, ss *ServiceScale, pick func(string) *family, addDelta func(string, *Delta)) {
	for di := range ss.Datapaths {
		for si := range ss.Datapaths[di].Steps {
			for mi := range ss.Datapaths[di].Steps[si].Metrics {
				addDelta("", ss.Datapaths[di].Steps[si].Metrics[mi].VsStep0)
			}
		}
	}
	for ci := range ss.Crossovers {
		c := &ss.Crossovers[ci]
		for pi := range c.pts {
			pt := &c.pts[pi]
			key := crossKey(rep, ss, c, pt.x)
			pick(key).add(key, pt.p, pt.sign != 0, func(string) { pt.sign = 0 })
		}
	}
}

// demotedText words a verdict significant alone but not in its family:
// its own words, effect and interval first, then why it is not
// significant.
func demotedText(text, why string, p float64) string {
	text = strings.Replace(text, "(significant, ", "(", 1)
	return fmt.Sprintf("%s, %s (p = %s)", text, why, pText(p))
}

// pText prints a p-value with two significant digits, however small.
func pText(p float64) string {
	return strconv.FormatFloat(p, 'g', 2, 64)
}

// tested is a verdict's p-value when it had a test, else NaN (JSON null).
//
// Under --rounds auto the verdicts test at the stricter per-look level
// 1 − α'; their p-values are put on the 5% scale (p · 0.05/α', at most 1)
// so that the false-discovery control and the reader compare them with
// 5% as everywhere else: p < α' exactly when the scaled p < 0.05.
func tested(v stats.Verdict, opt Options) Num {
	switch kindOf(v, opt) {
	case VerdictSignificant, VerdictNoise, VerdictInconclusive:
		if opt.sequential {
			return Num(math.Min(1, v.P*(1-stats.DefaultLevel)/(1-opt.Level)))
		}
		return Num(v.P)
	}
	return Num(math.NaN())
}

// crossKey names a crossover's step as the comparison of the step's own
// section (the two datapaths' short-connection RPS at that Service
// count), so the step is counted once in the family; "" when the report
// has no such section.
func crossKey(rep *Report, ss *ServiceScale, c *ScaleCrossover, services float64) string {
	a, b := ss.Datapaths[c.a], ss.Datapaths[c.b]
	where, test := stepPlacement(a.Placement, int(services), a.afterRounds), a.crossTestOf()
	col := func(name string) int {
		for i, cl := range rep.Columns {
			if cl.Scenario == name {
				return i
			}
		}
		return -1
	}
	ca, cb := col(a.Scenario), col(b.Scenario)
	if ca < 0 || cb < 0 {
		return ""
	}
	for si, sec := range rep.Sections {
		if sec.Test != test || sec.Placement != where {
			continue
		}
		for ri, row := range sec.Metrics {
			if row.Metric == crossMetric {
				return pairKey(si, ri, ca, cb)
			}
		}
	}
	return ""
}
