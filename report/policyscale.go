package report

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/cnibench/cnibench/results"
	"github.com/cnibench/cnibench/stats"
)

// The policy-scale analysis: a run whose scenarios put 0, N1, N2, … dummy
// rules per pod on the same datapath ("iptables+policy",
// "iptables+policy-1000", "iptables+policy-10k") is a policy-scale sweep
// with its steps interleaved round by round. Per datapath it lists the
// steps (rules, programming time, what the kernel held) and fits each
// headline metric's medians against the rule count: the cost of a
// thousand NetworkPolicy rules per pod.

// PolicyScale is the analysis of one run's policy-scale steps.
type PolicyScale struct {
	Datapaths []PolicyScaleDatapath `json:"datapaths"`
}

// PolicyScaleDatapath is one datapath's steps and fits.
type PolicyScaleDatapath struct {
	Base     string            `json:"base"` // the scenario without its policy part, e.g. "iptables"
	Enforcer string            `json:"enforcer"`
	Steps    []PolicyScaleStep `json:"steps"`
	Program  *PolicyProgramFit `json:"program,omitempty"` // nil when no step recorded a programming time
	Fits     []PolicyScaleFit  `json:"fits"`
}

// PolicyProgramFit is the growth of programming time with the rules per
// pod: what a NetworkPolicy change costs the agent, step by step.
type PolicyProgramFit struct {
	MsPerThousand Num `json:"ms_per_1000_rules"` // linear fit slope, every step
	Intercept     Num `json:"intercept_ms"`      // the fixed cost: pods, chains, hooks
	R2            Num `json:"r2"`                // of the linear fit
	Exponent      Num `json:"exponent"`          // k of y = a + b·x^k: 1 linear, 2 quadratic; null below 4 steps
	ExponentR2    Num `json:"exponent_r2"`
	UsPerRule     Num `json:"us_per_rule_at_max"` // (time − the 0-rule step's) / rules at the largest step; null without a 0-rule step
	N             int `json:"n"`
}

// PolicyScaleStep is one scenario of the sweep.
type PolicyScaleStep struct {
	Scenario  string `json:"scenario"`
	Rules     int    `json:"rules_per_pod"` // dummy rules in front of the real one
	ProgramMs Num    `json:"program_ms"`    // programming and read-back, every node
	Held      int    `json:"rules_held"`    // rules the kernel held, every node
	column    int
}

// PolicyScaleFit is a headline metric's medians fitted against the rules.
type PolicyScaleFit struct {
	Test        string `json:"test"`
	Placement   string `json:"placement"`
	Metric      string `json:"metric"`
	Unit        string `json:"unit"`
	PerThousand Num    `json:"per_1000_rules"`
	R2          Num    `json:"r2"`
	N           int    `json:"n"`
}

// policyBase is a scenario without its policy part ("policy" or
// "policy-N"): the datapath a policy-scale step belongs to. ok is false
// for a scenario without policy. The step's rule count is read from what
// the run programmed (details' policy.scale_rules), not from the name.
func policyBase(parts results.ScenarioName) (base string, ok bool) {
	isPolicy := func(p string) bool { return p == "policy" || strings.HasPrefix(p, "policy-") }
	rest := parts.Without(isPolicy)
	return rest.String(), len(rest) < len(parts)
}

// buildPolicyScale finds the policy-scale sweeps among rep's columns (one
// run): a datapath with at least two rule counts. nil when there is none.
func buildPolicyScale(rep *Report, run *results.Run) *PolicyScale {
	details := map[string]map[string]any{}
	for _, sc := range run.Scenarios {
		details[sc.Name] = sc.Target.Details
	}
	byBase := map[string]*PolicyScaleDatapath{}
	var order []string
	for ci, c := range rep.Columns {
		base, ok := policyBase(c.parts)
		if !ok {
			continue
		}
		d := byBase[base]
		if d == nil {
			d = &PolicyScaleDatapath{Base: base}
			byBase[base] = d
			order = append(order, base)
		}
		st := PolicyScaleStep{Scenario: c.Scenario, column: ci}
		if p, ok := detail[results.PolicyCheck](details[c.Scenario], "policy"); ok {
			d.Enforcer = p.Enforcer
			st.Rules, st.ProgramMs, st.Held = p.ScaleRules, Num(float64(p.Program)/float64(time.Millisecond)), p.Counts.Rules
		}
		d.Steps = append(d.Steps, st)
	}
	ps := &PolicyScale{}
	for _, base := range order {
		d := byBase[base]
		if len(d.Steps) < 2 {
			continue
		}
		slices.SortFunc(d.Steps, func(a, b PolicyScaleStep) int { return a.Rules - b.Rules })
		d.Program = policyProgramFit(d.Steps)
		d.Fits = policyFits(rep, d.Steps)
		ps.Datapaths = append(ps.Datapaths, *d)
	}
	if len(ps.Datapaths) == 0 {
		return nil
	}
	return ps
}

// policyProgramFit fits programming time against the rules per pod over
// every step that recorded one; nil below two such steps.
func policyProgramFit(steps []PolicyScaleStep) *PolicyProgramFit {
	var xs, ys []float64
	base := math.NaN()
	for _, st := range steps {
		if st.ProgramMs <= 0 {
			continue
		}
		xs, ys = append(xs, float64(st.Rules)), append(ys, float64(st.ProgramMs))
		if st.Rules == 0 {
			base = float64(st.ProgramMs)
		}
	}
	f, err := stats.LinearFit(xs, ys)
	if err != nil {
		return nil
	}
	p := &PolicyProgramFit{MsPerThousand: Num(f.Slope * 1000), Intercept: Num(f.Intercept), R2: Num(f.R2), N: f.N}
	p.Exponent, p.ExponentR2 = growthExponent(xs, ys)
	p.UsPerRule = Num(math.NaN())
	if top := len(xs) - 1; !math.IsNaN(base) && xs[top] > 0 {
		p.UsPerRule = Num(1000 * (ys[top] - base) / xs[top])
	}
	return p
}

// policyFits fits every headline metric's medians against the steps'
// rule counts.
func policyFits(rep *Report, steps []PolicyScaleStep) []PolicyScaleFit {
	var fits []PolicyScaleFit
	for _, sec := range rep.Sections {
		for _, row := range sec.Metrics {
			if !row.Headline {
				continue
			}
			var xs, ys []float64
			for _, st := range steps {
				if v := row.Values[st.column]; v != nil {
					xs, ys = append(xs, float64(st.Rules)), append(ys, float64(v.Median))
				}
			}
			f, err := stats.LinearFit(xs, ys)
			if err != nil {
				continue
			}
			fits = append(fits, PolicyScaleFit{Test: sec.Test, Placement: sec.Placement, Metric: row.Metric, Unit: row.Unit,
				PerThousand: Num(f.Slope * 1000), R2: Num(f.R2), N: f.N})
		}
	}
	return fits
}

// policyScaleLines renders the analysis as Markdown-safe lines: per
// datapath a steps line and one line per fit.
func (ps *PolicyScale) lines() (heads []string, bodies [][]string) {
	for _, d := range ps.Datapaths {
		var steps []string
		for _, s := range d.Steps {
			steps = append(steps, fmt.Sprintf("%s rules per pod: %d held, programmed in %.1f ms", thousands(s.Rules), s.Held, float64(s.ProgramMs)))
		}
		heads = append(heads, fmt.Sprintf("%s (%s enforcer): %s", d.Base, d.Enforcer, strings.Join(steps, "; ")))
		var fl []string
		if p := d.Program; p != nil {
			fl = append(fl, p.line())
		}
		for _, f := range d.Fits {
			fl = append(fl, fmt.Sprintf("%s %s, %s: %+.3g %s per 1,000 rules per pod (r² %.2f, n=%d)",
				f.Placement, f.Test, f.Metric, float64(f.PerThousand), f.Unit, float64(f.R2), f.N))
		}
		bodies = append(bodies, fl)
	}
	return heads, bodies
}

// line says how programming time grew: the linear slope, the exponent
// where there are enough steps, the marginal cost of a rule.
func (p *PolicyProgramFit) line() string {
	l := fmt.Sprintf("programming time: %+.3g ms per 1,000 rules per pod over %.3g ms fixed (r² %.2f, n=%d)",
		float64(p.MsPerThousand), float64(p.Intercept), float64(p.R2), p.N)
	if !math.IsNaN(float64(p.Exponent)) {
		l += fmt.Sprintf("; growth exponent %s (a + b·rules^k, r² %.2f)", stats.ExponentText(float64(p.Exponent)), float64(p.ExponentR2))
	} else {
		l += "; growth exponent needs 4 steps"
	}
	if !math.IsNaN(float64(p.UsPerRule)) {
		l += fmt.Sprintf("; %.3g µs per rule at the largest step", float64(p.UsPerRule))
	}
	return l
}

const policyScaleAbout = "Each datapath's policy scenarios as one sweep (steps interleaved round by round): the rules each step put in front of every server's real rule, what the kernel held and how long programming took, how programming time grew with the rules, then each headline metric's medians fitted against the rule count."

// policyScaleSection is each datapath's policy scenarios as one sweep
// (one run only).
type policyScaleSection struct{}

const policyScaleHeading = "Policy scale"

func (policyScaleSection) stage() buildStage { return beforeControl }

func (policyScaleSection) build(rep *Report, in []Input) error {
	if len(in) == 1 {
		rep.PolicyScale = buildPolicyScale(rep, in[0].Run)
	}
	return nil
}

func (policyScaleSection) markdown(b *strings.Builder, rep *Report) {
	if ps := rep.PolicyScale; ps != nil {
		heads, bodies := ps.lines()
		markdownBullets(b, policyScaleHeading, policyScaleAbout, heads, bodies)
	}
}

func (policyScaleSection) html(b *strings.Builder, rep *Report) error {
	if ps := rep.PolicyScale; ps != nil {
		heads, bodies := ps.lines()
		b.WriteString(string(htmlBullets(policyScaleHeading, policyScaleAbout, heads, bodies)))
	}
	b.WriteString("\n")
	return nil
}
