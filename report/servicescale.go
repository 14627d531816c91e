package report

import (
	"fmt"
	"math"
	"strings"

	"github.com/cnibench/cnibench/datapath"
	"github.com/cnibench/cnibench/datapath/sweep"
	"github.com/cnibench/cnibench/results"
	"github.com/cnibench/cnibench/stats"
)

// ServiceScale is the analysis of a Service-scale sweep (issue 4, item 4):
// per datapath a degradation table against step 0, fits of per-connection
// cost and programming time against the Service count, and where one
// datapath overtakes another, all computed from results.json alone.
type ServiceScale struct {
	Datapaths  []ScaleDatapath  `json:"datapaths"`
	Crossovers []ScaleCrossover `json:"crossovers"`
	// Findings answer the "Done when" questions in words.
	Findings []string `json:"findings"`
}

// ScaleDatapath is one scenario's sweep.
type ScaleDatapath struct {
	Scenario string `json:"scenario"`
	Datapath string `json:"datapath"`
	Position string `json:"service_position"`
	// Placement is where the steps were measured (other-node, or
	// same-node on a one-node target).
	Placement string      `json:"placement"`
	Stopped   string      `json:"stopped,omitempty"`
	Error     string      `json:"error,omitempty"`
	Notes     []string    `json:"notes,omitempty"`
	Steps     []ScaleStep `json:"steps"`
	// Cost is the linear fit of the per-connection cost (1/short-connection
	// RPS, µs) against Services, per sample; CRRCost the same for the
	// TCP_CRR p50 latency. Slope is in µs per 1,000 Services.
	Cost    *ScaleFit    `json:"cost_fit,omitempty"`
	CRRCost *ScaleFit    `json:"crr_p50_fit,omitempty"`
	Program *ProgramFit  `json:"programming_fit,omitempty"`
	Metrics []ScaleTrack `json:"-"`
	// afterRounds: its step 0 is the run's rounds (stepPlacement).
	afterRounds bool
}

// ScaleStep is one row of the degradation table.
type ScaleStep struct {
	Services     int             `json:"services"`
	TestPosition int             `json:"test_position"`
	ProgramMs    Num             `json:"programming_ms"` // generate + apply
	GenerateMs   Num             `json:"generate_ms"`
	ApplyMs      Num             `json:"apply_ms"`
	VerifyMs     Num             `json:"verify_ms"`
	Counts       datapath.Counts `json:"counts"`
	Expected     datapath.Counts `json:"expected"`
	Memory       datapath.Memory `json:"memory"`
	Conntrack    int             `json:"conntrack"`
	FlowEntries  int             `json:"flow_entries,omitempty"`
	Sync         *sweep.Sync     `json:"sync,omitempty"` // cluster sweeps: per-node sync
	Metrics      []ScaleMetric   `json:"metrics"`
}

// ScaleMetric is one measured quantity at one step, against step 0.
type ScaleMetric struct {
	Name  string `json:"name"`
	Unit  string `json:"unit"`
	Value *Value `json:"value,omitempty"`
	// Ratio is this step's median over step 0's (1 = unchanged).
	Ratio   Num    `json:"ratio_vs_step0"`
	VsStep0 *Delta `json:"vs_step0,omitempty"` // nil at step 0

	metric *results.Metric // its per-round values, for crossovers
}

// ScaleTrack names where a table column comes from.
type ScaleTrack struct {
	Name, Test, Metric string
}

// scaleTracks are the degradation table's traffic columns.
var scaleTracks = []ScaleTrack{
	{"keep-alive RPS", "HTTP_RPS_C64", results.MetricRPS},
	{crossTrack, crossTest, crossMetric},
	{"CRR rate", "TCP_CRR", results.MetricRate},
	{"CRR p50", "TCP_CRR", results.MetricP50},
	{"CRR p99", "TCP_CRR", results.MetricP99},
	{"RR p99", "TCP_RR", results.MetricP99},
}

// ScaleFit is a linear fit against the Service count.
type ScaleFit struct {
	What        string `json:"what"`
	PerThousand Num    `json:"per_1000_services"` // slope × 1,000
	Unit        string `json:"unit"`
	Intercept   Num    `json:"intercept"`
	R2          Num    `json:"r2"`
	N           int    `json:"n"`
}

// ProgramFit is the growth of programming time with the Service count.
type ProgramFit struct {
	Exponent     Num `json:"exponent"`               // k of y = a + b·x^k (stats.OffsetPowerFit): 1 linear, 2 quadratic; null below 4 steps
	ExponentR2   Num `json:"exponent_r2"`            // that fit's r²
	MsPerThous   Num `json:"ms_per_1000_services"`   // linear fit slope
	R2           Num `json:"r2"`                     // of the linear fit
	UsPerService Num `json:"us_per_service_at_max"`  // programming time / Services at the largest step
	GenSharePct  Num `json:"max_generate_share_pct"` // the tool's own share, worst step
	MaxServices  int `json:"max_services"`           // largest step programmed
	MaxMs        Num `json:"programming_ms_at_max"`  // its programming time
	PointsFitted int `json:"points"`                 // steps with Services > 0
}

// ScaleCrossover says where two datapaths' short-connection RPS curves
// cross, if they do in the measured range.
type ScaleCrossover struct {
	A        string `json:"a"`
	B        string `json:"b"`
	Crosses  bool   `json:"crosses"`
	Services Num    `json:"services,omitempty"` // interpolated crossing point
	Ahead    string `json:"ahead_after"`        // the better one after the crossing (or everywhere)
	// Between is the two steps the crossing lies between: the last where
	// one datapath was significantly ahead and the first where the other
	// was (paired: the datapaths' rounds interleave at every step).
	Between [2]int `json:"between,omitempty"`
	Text    string `json:"text"`
	// pts are the compared steps, kept until the false-discovery control
	// has judged their verdicts (the text is then written again); a, b
	// index the service scale's datapaths.
	pts  []crossPoint
	a, b int
}

// sweepPlacement names a sweep result's section by its step, so the plain
// sections compare the datapaths step by step instead of mixing steps.
func sweepPlacement(run *results.Run, r results.Result) string {
	if len(run.Sweeps) == 0 {
		return r.Placement.Name()
	}
	return stepPlacement(r.Placement.Name(), r.Services, sweptAfterRounds(run))
}

// stepPlacement names the section of a step: the placement at its
// Service count, or the placement alone at 0 Services when the sweep
// followed the run's rounds (they measured that state, in their plain
// sections).
func stepPlacement(placement string, services int, afterRounds bool) string {
	if services == 0 && afterRounds {
		return placement
	}
	return fmt.Sprintf("%s @ %s Services", placement, thousands(services))
}

// sweptAfterRounds tells whether the run's sweep followed its rounds
// (results.Sweep.AfterRounds: a profile's rows at scale).
func sweptAfterRounds(run *results.Run) bool {
	for _, sw := range run.Sweeps {
		if sw.AfterRounds {
			return true
		}
	}
	return false
}

// fortioTwins are the tracks' tests as fortio's client measures them: a
// profile whose report used fortio (tke) sweeps those.
var fortioTwins = map[string]string{"HTTP_RPS_C64": "FORTIO_RPS_C64", "HTTP_RPS_SHORT_C64": "FORTIO_RPS_SHORT_C64"}

// sweepTracks are the table's columns for one sweep: every track of a
// sweep of its own; after the rounds, only the tracks it swept, a test
// measured with fortio's client under its own name.
func sweepTracks(run *results.Run, sw results.Sweep) []ScaleTrack {
	if !sw.AfterRounds {
		return scaleTracks
	}
	swept := func(test string) bool {
		for _, r := range run.Results {
			if r.Scenario == sw.Scenario && r.Test == test && r.Services > 0 {
				return true
			}
		}
		return false
	}
	var out []ScaleTrack
	for _, tr := range scaleTracks {
		if twin, ok := fortioTwins[tr.Test]; ok && !swept(tr.Test) && swept(twin) {
			tr.Test = twin
		}
		if swept(tr.Test) {
			out = append(out, tr)
		}
	}
	return out
}

// buildServiceScale analyses the sweeps of run (nil without sweeps).
func buildServiceScale(run *results.Run, opt Options) (*ServiceScale, error) {
	if len(run.Sweeps) == 0 {
		return nil, nil
	}
	ss := &ServiceScale{}
	for _, sw := range run.Sweeps {
		d, err := scaleDatapath(run, sw, opt)
		if err != nil {
			return nil, err
		}
		ss.Datapaths = append(ss.Datapaths, d)
	}
	for i := range ss.Datapaths {
		for j := i + 1; j < len(ss.Datapaths); j++ {
			c := crossover(ss.Datapaths[i], ss.Datapaths[j], opt)
			c.a, c.b = i, j
			ss.Crossovers = append(ss.Crossovers, c)
		}
	}
	// Its Findings are written by Build once the false-discovery control
	// has judged the step verdicts they quote.
	return ss, nil
}

func scaleDatapath(run *results.Run, sw results.Sweep, opt Options) (ScaleDatapath, error) {
	d := ScaleDatapath{Scenario: sw.Scenario, Datapath: sw.Datapath, Position: sw.Options.Position, Placement: sw.Placement,
		Stopped: sw.Stopped, Error: sw.Error, Notes: sw.Notes, Metrics: sweepTracks(run, sw), afterRounds: sw.AfterRounds}
	if d.Placement == "" { // results from before same-node existed
		d.Placement = "pod-to-service/other-node"
	}
	find := func(test string, n int) (*results.Series, error) {
		for _, r := range run.Results {
			// The placement too: after the rounds, step 0's results are
			// the rounds', which measured the test on other placements.
			if r.Scenario == sw.Scenario && r.Test == test && r.Services == n && r.Placement.Name() == d.Placement {
				s, err := results.Metrics(r)
				return &s, err
			}
		}
		return nil, nil
	}
	base := make([]*results.Metric, len(d.Metrics))
	var costX, costY, crrX, crrY []float64
	for si, st := range sw.Steps {
		row := ScaleStep{Services: st.Services, TestPosition: st.Position,
			GenerateMs: ms(st.Program.Generate.Seconds()), ApplyMs: ms(st.Program.Apply.Seconds()),
			ProgramMs: ms((st.Program.Generate + st.Program.Apply).Seconds()), VerifyMs: ms(st.Verify.Seconds()),
			Counts: st.Counts, Expected: st.Expected, Memory: st.Memory, Conntrack: st.Conntrack, FlowEntries: st.FlowEntries, Sync: st.Sync}
		for ti, tr := range d.Metrics {
			sm := ScaleMetric{Name: tr.Name, Ratio: Num(math.NaN())}
			s, err := find(tr.Test, st.Services)
			if err != nil {
				return d, fmt.Errorf("%s at %d Services: %w", sw.Scenario, st.Services, err)
			}
			var m *results.Metric
			if s != nil {
				m = s.Metric(tr.Metric)
			}
			if m != nil && len(m.Values) > 0 {
				sm.Unit = m.Unit
				sm.Value, sm.metric = value(m, opt), m
				if si == 0 {
					base[ti] = m
				}
				if b := base[ti]; b != nil {
					b0 := stats.Describe(b.Values, stats.CIOptions{}).Median
					if b0 != 0 {
						sm.Ratio = Num(float64(sm.Value.Median) / b0)
					}
					if si > 0 {
						sm.VsStep0 = delta(b, m, opt, false) // steps are measured at different times: unpaired
					}
				}
				switch {
				case tr.Name == crossTrack:
					for _, v := range m.Values {
						if v > 0 {
							costX = append(costX, float64(st.Services))
							costY = append(costY, 1e6/v)
						}
					}
				case tr.Name == "CRR p50":
					for _, v := range m.Values {
						crrX = append(crrX, float64(st.Services))
						crrY = append(crrY, v)
					}
				}
			}
			row.Metrics = append(row.Metrics, sm)
		}
		d.Steps = append(d.Steps, row)
	}
	d.Cost = linear("1/short-connection RPS", "µs per connection", costX, costY)
	d.CRRCost = linear("TCP_CRR p50 latency", "µs", crrX, crrY)
	d.Program = programFit(d.Steps)
	return d, nil
}

func linear(what, unit string, xs, ys []float64) *ScaleFit {
	f, err := stats.LinearFit(xs, ys)
	if err != nil {
		return nil
	}
	return &ScaleFit{What: what, Unit: unit, PerThousand: Num(f.Slope * 1000), Intercept: Num(f.Intercept), R2: Num(f.R2), N: f.N}
}

func programFit(steps []ScaleStep) *ProgramFit {
	var xs, ys []float64
	p := &ProgramFit{}
	for _, s := range steps {
		// Step 0 (the test Service alone, microseconds) would only add noise.
		if total := float64(s.ProgramMs); total > 0 && s.Services > 0 {
			p.GenSharePct = Num(math.Max(float64(p.GenSharePct), 100*float64(s.GenerateMs)/total))
		}
		if s.Services > 0 {
			xs = append(xs, float64(s.Services))
			ys = append(ys, float64(s.ProgramMs))
			p.MaxServices, p.MaxMs = s.Services, s.ProgramMs
			p.UsPerService = Num(1000 * float64(s.ProgramMs) / float64(s.Services))
		}
	}
	p.PointsFitted = len(xs)
	if len(xs) == 0 {
		return nil
	}
	// The growth exponent fits every step, step 0 included: it pins the
	// fixed overhead a of a + b·x^k, which a log-log slope would mistake
	// for slower growth.
	var ax, ay []float64
	for _, s := range steps {
		ax, ay = append(ax, float64(s.Services)), append(ay, float64(s.ProgramMs))
	}
	p.Exponent, p.ExponentR2 = growthExponent(ax, ay)
	p.MsPerThous, p.R2 = Num(math.NaN()), Num(math.NaN())
	if f, err := stats.LinearFit(xs, ys); err == nil {
		p.MsPerThous, p.R2 = Num(f.Slope*1000), Num(f.R2)
	}
	return p
}

// growthExponent is k of y = a + b·x^k fitted through every point, and
// that fit's r² (NaN below the 4 points stats.OffsetPowerFit needs): 1
// grows linearly, 2 quadratically. Fitting a pins the fixed overhead,
// which a log-log slope would mistake for slower growth.
func growthExponent(xs, ys []float64) (k, r2 Num) {
	if _, _, fk, fr2, err := stats.OffsetPowerFit(xs, ys); err == nil {
		return Num(fk), Num(fr2)
	}
	return Num(math.NaN()), Num(math.NaN())
}

// track returns the median of a track at every step, NaN where missing.
func (d ScaleDatapath) track(name string) (xs, ys []float64) {
	for _, s := range d.Steps {
		for _, m := range s.Metrics {
			if m.Name == name && m.Value != nil {
				xs = append(xs, float64(s.Services))
				ys = append(ys, float64(m.Value.Median))
			}
		}
	}
	return xs, ys
}

// crossover compares two datapaths' short-connection RPS on the steps
// both measured. A crossing is claimed only where one datapath is
// significantly ahead at a step and the other significantly ahead at a
// later one (each step's rounds compared pairwise: the datapaths
// interleave); a flat curve against a noisy one does not "cross".
func crossover(a, b ScaleDatapath, opt Options) ScaleCrossover {
	pts := crossPoints(a, b, opt)
	c := crossoverText(a, b, pts)
	c.pts = pts
	return c
}

// crossPoints pairs the two datapaths' steps and says, per step, which is
// significantly ahead (its rounds compared pairwise: they interleave).
func crossPoints(a, b ScaleDatapath, opt Options) []crossPoint {
	var pts []crossPoint
	for _, sa := range a.Steps {
		ma := sa.metricNamed(crossTrack)
		for _, sb := range b.Steps {
			mb := sb.metricNamed(crossTrack)
			if sb.Services != sa.Services || ma == nil || mb == nil || ma.Value == nil || mb.Value == nil {
				continue
			}
			p := crossPoint{x: float64(sa.Services), va: float64(ma.Value.Median), vb: float64(mb.Value.Median), p: math.NaN()}
			if ma.metric != nil && mb.metric != nil {
				v := compare(ma.metric, mb.metric, opt, true)
				if k := kindOf(v, opt); k == VerdictSignificant || k == VerdictNoise || k == VerdictInconclusive {
					p.p = v.P
				}
				if v.Significant {
					p.sign = 1
					if v.DeltaPct < 0 {
						p.sign = -1
					}
				}
			}
			pts = append(pts, p)
		}
	}
	return pts
}

// The short-connection RPS track, the one the crossovers compare: its
// name, its test in a sweep of its own (crossTestOf) and its metric.
const (
	crossTrack  = "short-connection RPS"
	crossTest   = "HTTP_RPS_SHORT_C64"
	crossMetric = results.MetricRPS
)

// crossTestOf is the test of d's short-connection RPS track.
func (d ScaleDatapath) crossTestOf() string {
	for _, tr := range d.Metrics {
		if tr.Name == crossTrack {
			return tr.Test
		}
	}
	return crossTest
}

// crossPoint is one shared step of two datapaths' short-connection RPS.
type crossPoint struct {
	x      float64
	va, vb float64
	sign   int     // +1: b significantly ahead, -1: a, 0: neither
	p      float64 // its verdict's p-value, NaN without a test
}

// crossoverText is the claim crossover makes from its points.
func crossoverText(a, b ScaleDatapath, pts []crossPoint) ScaleCrossover {
	c := ScaleCrossover{A: a.Scenario, B: b.Scenario}
	if len(pts) < 2 {
		c.Text = fmt.Sprintf("%s vs %s: fewer than 2 shared steps, no crossover computed", a.Scenario, b.Scenario)
		return c
	}
	last := pts[len(pts)-1]
	c.Ahead = a.Scenario
	if last.vb > last.va {
		c.Ahead = b.Scenario
	}
	first, lastOfFirst, flip := -1, -1, -1
	for i, p := range pts {
		switch {
		case p.sign == 0:
		case first < 0:
			first, lastOfFirst = i, i
		case p.sign == pts[first].sign && flip < 0:
			lastOfFirst = i
		case p.sign == -pts[first].sign && flip < 0:
			flip = i
		}
	}
	significant := 0
	for _, p := range pts {
		if p.sign != 0 {
			significant++
		}
	}
	if flip < 0 {
		what := "no crossover in the measured range"
		var xs, va, vb []float64
		for _, p := range pts {
			xs, va, vb = append(xs, p.x), append(va, p.va), append(vb, p.vb)
		}
		if x, ok := stats.Crossover(xs, va, vb); ok {
			what = fmt.Sprintf("no significant crossover (the medians cross at about %s Services, but no datapath is significantly ahead on both sides)", thousands(int(math.Round(x))))
		}
		c.Text = fmt.Sprintf("%s vs %s: %s (0–%s Services; %d of %d steps differ significantly); %s has the higher short-connection RPS at %s Services",
			a.Scenario, b.Scenario, what, thousands(int(last.x)), significant, len(pts), c.Ahead, thousands(int(last.x)))
		return c
	}
	seg := pts[lastOfFirst : flip+1]
	var xs, va, vb []float64
	for _, p := range seg {
		xs, va, vb = append(xs, p.x), append(va, p.va), append(vb, p.vb)
	}
	x, ok := stats.Crossover(xs, va, vb)
	if !ok {
		x = (seg[0].x + seg[len(seg)-1].x) / 2
	}
	c.Crosses, c.Services = true, Num(math.Round(x))
	c.Between = [2]int{int(seg[0].x), int(seg[len(seg)-1].x)}
	c.Text = fmt.Sprintf("%s vs %s: the short-connection RPS curves cross between %s and %s Services (about %s; significant on both sides); %s is ahead at %s Services",
		a.Scenario, b.Scenario, thousands(c.Between[0]), thousands(c.Between[1]), thousands(int(math.Round(x))), c.Ahead, thousands(int(last.x)))
	return c
}

// metricNamed is the step's metric of that name, or nil.
func (s ScaleStep) metricNamed(name string) *ScaleMetric {
	for i := range s.Metrics {
		if s.Metrics[i].Name == name {
			return &s.Metrics[i]
		}
	}
	return nil
}

// findings answers the "Done when" questions from the data.
func findings(ss *ServiceScale) []string {
	var out []string
	for _, d := range ss.Datapaths {
		if len(d.Steps) == 0 {
			out = append(out, fmt.Sprintf("%s (%s): no step measured%s", d.Scenario, d.Datapath, note(d)))
			continue
		}
		last := d.Steps[len(d.Steps)-1]
		if len(d.Steps) > 1 {
			for _, name := range []string{"short-connection RPS", "keep-alive RPS"} {
				for _, m := range last.Metrics {
					if m.Name != name {
						continue
					}
					if m.Value == nil || math.IsNaN(float64(m.Ratio)) {
						out = append(out, fmt.Sprintf("%s %s at %s Services: no ratio to step 0 (a step without a successful sample, or a zero at step 0).",
							d.Scenario, name, thousands(last.Services)))
						continue
					}
					verdict := ""
					if m.VsStep0 != nil {
						verdict = " (" + m.VsStep0.Verdict + ")"
					}
					band := ""
					if name == "keep-alive RPS" {
						band = ", " + bandText(m.VsStep0, 10)
					}
					out = append(out, fmt.Sprintf("%s %s at %s Services is %.2f× step 0%s%s.",
						d.Scenario, name, thousands(last.Services), float64(m.Ratio), verdict, band))
				}
			}
		}
		if p := d.Program; p != nil {
			growth := "growth exponent n/a (fewer than 4 steps)"
			if !math.IsNaN(float64(p.Exponent)) {
				growth = fmt.Sprintf("growth exponent %s, fit of a + b·Services^k with r² %.2f", stats.ExponentText(float64(p.Exponent)), float64(p.ExponentR2))
			}
			out = append(out, fmt.Sprintf("%s programs %s Services in %s (%s, %.1f µs per Service; rule generation at most %.1f%% of programming time).",
				d.Scenario, thousands(p.MaxServices), msText(float64(p.MaxMs)), growth, float64(p.UsPerService), float64(p.GenSharePct)))
		}
		if d.Stopped != "" || d.Error != "" {
			out = append(out, fmt.Sprintf("%s:%s", d.Scenario, strings.TrimPrefix(note(d), " "+d.Datapath+":")))
		}
	}
	for _, c := range ss.Crossovers {
		out = append(out, c.Text+".")
	}
	return out
}

// bandText says whether a step's change against step 0 holds within ±pct:
// only when its whole interval lies inside, never from the point ratio
// alone; outside when the whole interval lies beyond; else unknown.
func bandText(d *Delta, pct float64) string {
	if d == nil || math.IsNaN(float64(d.Lo)) || math.IsNaN(float64(d.Hi)) || d.Verdict == VerdictTooFew || d.Verdict == VerdictNA {
		return fmt.Sprintf("±%g%% of step 0 not judged (%s)", pct, verdictOr(d))
	}
	lo, hi := float64(d.Lo), float64(d.Hi)
	ci := "CI " + stats.BoundsText(lo, hi)
	switch {
	case lo >= -pct && hi <= pct:
		return fmt.Sprintf("within ±%g%% of step 0 (%s)", pct, ci)
	case hi < -pct || lo > pct:
		return fmt.Sprintf("outside ±%g%% of step 0 (%s)", pct, ci)
	}
	return fmt.Sprintf("not shown to be within ±%g%% of step 0 (%s)", pct, ci)
}

func verdictOr(d *Delta) string {
	if d == nil {
		return "no comparison"
	}
	return d.Text
}

func note(d ScaleDatapath) string {
	switch {
	case d.Error != "":
		return " failed: " + d.Error
	case d.Stopped != "":
		return " " + d.Stopped
	}
	return ""
}

func ms(sec float64) Num { return Num(sec * 1000) }

// msText prints milliseconds as ms or s.
func msText(v float64) string {
	switch {
	case math.IsNaN(v):
		return "–"
	case v >= 10000:
		return fmt.Sprintf("%.0f s", v/1000)
	case v >= 1000:
		return fmt.Sprintf("%.2f s", v/1000)
	case v >= 10:
		return fmt.Sprintf("%.0f ms", v)
	}
	return fmt.Sprintf("%.2f ms", v)
}

// thousands prints n with thousands separators.
func thousands(n int) string { return stats.Thousands(n) }
