package report

import (
	"fmt"
	"math"
	"strings"

	"github.com/cnibench/cnibench/datapath"
	"github.com/cnibench/cnibench/results"
	"github.com/cnibench/cnibench/stats"
	"github.com/cnibench/cnibench/sweep"
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
}

// ScaleTrack names where a table column comes from.
type ScaleTrack struct {
	Name, Test, Metric string
}

// scaleTracks are the degradation table's traffic columns.
var scaleTracks = []ScaleTrack{
	{"keep-alive RPS", "HTTP_RPS_C64", results.MetricRPS},
	{"short-connection RPS", "HTTP_RPS_SHORT_C64", results.MetricRPS},
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
	Exponent     Num `json:"exponent"`               // PowerFit: 1 linear, 2 quadratic
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
	Text     string `json:"text"`
}

// sweepPlacement names a sweep result's section by its step, so the plain
// sections compare the datapaths step by step instead of mixing steps.
func sweepPlacement(run *results.Run, r results.Result) string {
	if len(run.Sweeps) == 0 {
		return r.Placement.Name()
	}
	return fmt.Sprintf("%s @ %s Services", r.Placement.Name(), thousands(r.Services))
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
			ss.Crossovers = append(ss.Crossovers, crossover(ss.Datapaths[i], ss.Datapaths[j]))
		}
	}
	ss.Findings = findings(ss)
	return ss, nil
}

func scaleDatapath(run *results.Run, sw results.Sweep, opt Options) (ScaleDatapath, error) {
	d := ScaleDatapath{Scenario: sw.Scenario, Datapath: sw.Datapath, Position: sw.Options.Position, Placement: sw.Placement,
		Stopped: sw.Stopped, Error: sw.Error, Notes: sw.Notes, Metrics: scaleTracks}
	if d.Placement == "" { // results from before same-node existed
		d.Placement = "pod-to-service/other-node"
	}
	find := func(test string, n int) (*results.Series, error) {
		for _, r := range run.Results {
			if r.Scenario == sw.Scenario && r.Test == test && r.Services == n {
				s, err := results.Metrics(r)
				return &s, err
			}
		}
		return nil, nil
	}
	base := make([]*results.Metric, len(scaleTracks))
	var costX, costY, crrX, crrY []float64
	for si, st := range sw.Steps {
		row := ScaleStep{Services: st.Services, TestPosition: st.Position,
			GenerateMs: ms(st.Program.Generate.Seconds()), ApplyMs: ms(st.Program.Apply.Seconds()),
			ProgramMs: ms((st.Program.Generate + st.Program.Apply).Seconds()), VerifyMs: ms(st.Verify.Seconds()),
			Counts: st.Counts, Expected: st.Expected, Memory: st.Memory, Conntrack: st.Conntrack, FlowEntries: st.FlowEntries, Sync: st.Sync}
		for ti, tr := range scaleTracks {
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
				sm.Value = value(m, opt)
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
				case tr.Test == "HTTP_RPS_SHORT_C64":
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
	p.Exponent = Num(math.NaN())
	if k, _, err := stats.PowerFit(xs, ys); err == nil {
		p.Exponent = Num(k)
	}
	p.MsPerThous, p.R2 = Num(math.NaN()), Num(math.NaN())
	if f, err := stats.LinearFit(xs, ys); err == nil {
		p.MsPerThous, p.R2 = Num(f.Slope*1000), Num(f.R2)
	}
	return p
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

// crossover compares the short-connection RPS curves on the steps both
// datapaths measured.
func crossover(a, b ScaleDatapath) ScaleCrossover {
	const track = "short-connection RPS"
	ax, ay := a.track(track)
	bx, by := b.track(track)
	bAt := map[float64]float64{}
	for i, x := range bx {
		bAt[x] = by[i]
	}
	var xs, va, vb []float64
	for i, x := range ax {
		if y, ok := bAt[x]; ok {
			xs, va, vb = append(xs, x), append(va, ay[i]), append(vb, y)
		}
	}
	c := ScaleCrossover{A: a.Scenario, B: b.Scenario}
	if len(xs) < 2 {
		c.Text = fmt.Sprintf("%s vs %s: fewer than 2 shared steps, no crossover computed", a.Scenario, b.Scenario)
		return c
	}
	last := len(xs) - 1
	c.Ahead = a.Scenario
	if vb[last] > va[last] {
		c.Ahead = b.Scenario
	}
	x, ok := stats.Crossover(xs, va, vb)
	if !ok {
		c.Text = fmt.Sprintf("%s vs %s: no crossover in the measured range (0–%s Services): %s has the higher short-connection RPS at every step",
			a.Scenario, b.Scenario, thousands(int(xs[last])), c.Ahead)
		return c
	}
	c.Crosses, c.Services = true, Num(math.Round(x))
	c.Text = fmt.Sprintf("%s vs %s: the short-connection RPS curves cross at about %s Services; %s is ahead at %s Services",
		a.Scenario, b.Scenario, thousands(int(math.Round(x))), c.Ahead, thousands(int(xs[last])))
	return c
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
						if math.Abs(float64(m.Ratio)-1) <= 0.10 {
							band = ", within ±10% of step 0"
						} else {
							band = ", outside ±10% of step 0"
						}
					}
					out = append(out, fmt.Sprintf("%s %s at %s Services is %.2f× step 0%s%s.",
						d.Scenario, name, thousands(last.Services), float64(m.Ratio), verdict, band))
				}
			}
		}
		if p := d.Program; p != nil {
			growth := "growth exponent n/a (one step)"
			if !math.IsNaN(float64(p.Exponent)) {
				growth = fmt.Sprintf("growth exponent %.2f", float64(p.Exponent))
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
func thousands(n int) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return "-" + thousands(-n)
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
