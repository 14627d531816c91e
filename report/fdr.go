package report

import (
	"fmt"
	"math"
	"strings"

	"github.com/cnibench/cnibench/stats"
)

// FDR says how the report's verdicts were held together: a standard
// profile judges hundreds of metrics, and at 5% each identical code would
// show dozens of "significant" lines. Every comparison with a test (each
// column against the baseline, each winner, each sweep step against step
// 0) joins one Benjamini–Hochberg family; a significant verdict stays
// significant only if it is a discovery of that family.
type FDR struct {
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
	s := fmt.Sprintf("%d comparisons judged; %d significant with the false-discovery rate held at %g%% (Benjamini–Hochberg), so about %.1f of them may be false",
		f.Comparisons, f.Significant, 100*f.Level, f.ExpectedFalse())
	if f.Demoted > 0 {
		s += fmt.Sprintf("; %d more looked significant alone and are not counted", f.Demoted)
	}
	return s + "."
}

// verdictRef is one verdict of the family, whichever kind it is.
type verdictRef struct {
	p      float64
	demote func(m int) // called when a significant verdict is no discovery
	sig    bool
}

// controlFDR applies Benjamini–Hochberg to every tested verdict of rep.
func controlFDR(rep *Report) {
	var fam []verdictRef
	addDelta := func(d *Delta) {
		if d == nil || math.IsNaN(float64(d.P)) {
			return
		}
		fam = append(fam, verdictRef{p: float64(d.P), sig: d.Verdict == VerdictSignificant, demote: func(m int) {
			d.Verdict, d.Better, d.Worse = VerdictNoise, false, false
			d.Text = demotedText(m, float64(d.P))
		}})
	}
	for si := range rep.Sections {
		for ri := range rep.Sections[si].Metrics {
			row := &rep.Sections[si].Metrics[ri]
			for _, d := range row.VsBaseline {
				addDelta(d)
			}
			if w := row.Winner; w != nil && !math.IsNaN(float64(w.P)) {
				fam = append(fam, verdictRef{p: float64(w.P), sig: w.Verdict == VerdictSignificant, demote: func(m int) {
					prefix := ""
					if strings.HasPrefix(w.Text, "control: ") {
						prefix = "control: "
					}
					w.Verdict, w.Label = VerdictNoise, ""
					w.Text = prefix + w.Best + " vs " + w.RunnerUp + ": " + demotedText(m, float64(w.P))
				}})
			}
		}
	}
	if ss := rep.ServiceScale; ss != nil {
		for di := range ss.Datapaths {
			for si := range ss.Datapaths[di].Steps {
				for mi := range ss.Datapaths[di].Steps[si].Metrics {
					addDelta(ss.Datapaths[di].Steps[si].Metrics[mi].VsStep0)
				}
			}
		}
	}
	f := &FDR{Level: stats.DefaultFDR, Comparisons: len(fam)}
	ps := make([]float64, len(fam))
	for i, v := range fam {
		ps[i] = v.p
	}
	for i, disc := range stats.BenjaminiHochberg(ps, f.Level) {
		switch {
		case fam[i].sig && disc:
			f.Significant++
		case fam[i].sig:
			f.Demoted++
			fam[i].demote(len(fam))
		}
	}
	rep.FDR = f
}

// demotedText words a verdict significant alone but not among m.
func demotedText(m int, p float64) string {
	return fmt.Sprintf("not significant once the report's %d comparisons are held to a 5%% false-discovery rate (p = %.2g)", m, p)
}

// tested is a verdict's p-value when it had a test, else NaN (JSON null).
func tested(v stats.Verdict, opt Options) Num {
	switch kindOf(v, opt) {
	case VerdictSignificant, VerdictNoise, VerdictInconclusive:
		return Num(v.P)
	}
	return Num(math.NaN())
}
