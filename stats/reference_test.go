package stats

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"
)

// The stats arithmetic against R on fixed inputs: testdata/reference.json,
// written by scripts/stats-reference.R (rerun it where R is installed).
// Comparisons run with MinEffectPct < 0, where the verdicts' p-value is the
// ordinary point-null p-value R computes, on the log scale of the effect.

// num is a JSON number that may also be null (NaN), "+Inf" or "-Inf".
type num float64

func (x *num) UnmarshalJSON(b []byte) error {
	switch s := string(b); s {
	case "null":
		*x = num(math.NaN())
	case `"+Inf"`:
		*x = num(math.Inf(1))
	case `"-Inf"`:
		*x = num(math.Inf(-1))
	default:
		var f float64
		if err := json.Unmarshal(b, &f); err != nil {
			return err
		}
		*x = num(f)
	}
	return nil
}

func floats(xs []num) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = float64(x)
	}
	return out
}

type refDescribe struct {
	N                        int
	Median, Lo, Hi, Coverage num
}

type refHL struct{ Estimate, Lo, Hi, Coverage num }

type refSet struct {
	Name                   string
	Tags                   []string
	A, B, D                []num
	DescribeA              *refDescribe `json:"describe_a"`
	DescribeB              *refDescribe `json:"describe_b"`
	T                      *struct{ Mean, Lo, Hi, P, DF num }
	TNote                  string `json:"t_note"`
	Mean                   *num   // where t.test found the data constant
	SignedRankExactP       *num   `json:"signed_rank_exact_p"`
	WilcoxonP              *num   `json:"wilcoxon_p"` // paired, exact
	WilcoxP                *num   `json:"wilcox_p"`   // unpaired, exact
	HL                     *refHL
	HLSource               string `json:"hl_source"`
	Ties                   bool
	MannWhitneyExactP      *num `json:"mann_whitney_exact_p"`
	MannWhitneyExactPTails *num `json:"mann_whitney_exact_p_tails"`
}

type reference struct {
	Tool, Generated string
	Level           float64
	Paired          []refSet
	Unpaired        []refSet
	BH              []struct {
		Name     string
		P        []num
		Q05, Q10 []bool
	}
	Fit []struct {
		Name          string
		X, Y          []num
		Linear, Power struct{ Slope, Intercept, R2, K num }
		OffsetPower   struct{ A, B, K, R2 num } `json:"offset_power"`
		NlsK          *num                      `json:"nls_k"`
	}
}

func loadReference(t *testing.T) reference {
	t.Helper()
	b, err := os.ReadFile("testdata/reference.json")
	if err != nil {
		t.Fatal(err)
	}
	var r reference
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

// rel: |got − want| ≤ tol·|want| (equal infinities pass).
func rel(got, want, tol float64) bool {
	return got == want || math.Abs(got-want) <= tol*math.Abs(want)
}

// near: |got − want| ≤ tol (equal infinities pass).
func near(got, want, tol float64) bool {
	return got == want || math.Abs(got-want) <= tol
}

// logOfPct is the log ratio a verdict's percentage stands for.
func logOfPct(pct float64) float64 { return math.Log1p(pct / 100) }

// pointNull asks for the point-null p-value: no minimum effect.
var pointNull = CompareOptions{HigherIsBetter: true, MinEffectPct: -1}

// checkHL compares a verdict's estimate and interval, on the log scale,
// and its coverage with a Hodges-Lehmann reference, to 1e-12.
func checkHL(t *testing.T, v Verdict, hl *refHL) {
	t.Helper()
	for _, c := range []struct {
		what      string
		got, want float64
	}{
		{"estimate", logOfPct(v.DeltaPct), float64(hl.Estimate)},
		{"lo", logOfPct(v.Lo), float64(hl.Lo)},
		{"hi", logOfPct(v.Hi), float64(hl.Hi)},
		{"coverage", v.Coverage, float64(hl.Coverage)},
	} {
		if !near(c.got, c.want, 1e-12) {
			t.Errorf("%s: %s %.17g, R %.17g", v.Method, c.what, c.got, c.want)
		}
	}
}

func TestReferenceCoversTheCases(t *testing.T) {
	r := loadReference(t)
	if !strings.HasPrefix(r.Tool, "R version") || r.Generated == "" || r.Level != 0.95 {
		t.Errorf("header: tool %q, generated %q, level %g", r.Tool, r.Generated, r.Level)
	}
	tags := map[string]int{}
	for _, s := range append(append([]refSet(nil), r.Paired...), r.Unpaired...) {
		for _, tag := range s.Tags {
			tags[tag]++
		}
	}
	if n := len(r.Paired) + len(r.Unpaired); n < 40 {
		t.Errorf("%d input sets, want ≥ 40", n)
	}
	for _, want := range []string{"ties", "n=5", "n=6", "n=10", "n=20", "unequal sizes", "zeros",
		"equal columns", "constant ratio", "negative effect", "large effect"} {
		if tags[want] == 0 {
			t.Errorf("no input set tagged %q", want)
		}
	}
	t.Logf("%s, %s: %d paired, %d unpaired, %d BH, %d fit sets; tags %v",
		r.Tool, r.Generated, len(r.Paired), len(r.Unpaired), len(r.BH), len(r.Fit), tags)
}

// ComparePaired's t-interval and p against t.test(d), to 1e-9 relative.
func TestReferencePairedT(t *testing.T) {
	for _, s := range loadReference(t).Paired {
		t.Run(s.Name, func(t *testing.T) {
			a, b := floats(s.A), floats(s.B)
			v := ComparePaired(a, b, pointNull)
			switch {
			case s.T != nil:
				if v.Method != MethodPaired || v.N != len(a) {
					t.Fatalf("method %q on %d pairs, want the t-interval on %d: %s", v.Method, v.N, len(a), v.Text)
				}
				for _, c := range []struct {
					what      string
					got, want float64
				}{
					{"mean", logOfPct(v.DeltaPct), float64(s.T.Mean)},
					{"lo", logOfPct(v.Lo), float64(s.T.Lo)},
					{"hi", logOfPct(v.Hi), float64(s.T.Hi)},
				} {
					if !rel(c.got, c.want, 1e-9) && !near(c.got, c.want, 1e-15) {
						t.Errorf("%s %.17g, R %.17g", c.what, c.got, c.want)
					}
				}
				if !rel(v.P, float64(s.T.P), 1e-9) {
					t.Errorf("p %.17g, R %.17g", v.P, float64(s.T.P))
				}
				if v.Coverage != 0.95 {
					t.Errorf("coverage %g", v.Coverage)
				}
			case s.Mean != nil:
				// R: "data are essentially constant". The interval collapses
				// onto the common log ratio; identical columns are no
				// difference at all.
				mean := float64(*s.Mean)
				if !near(logOfPct(v.Lo), mean, 1e-12) || !near(logOfPct(v.Hi), mean, 1e-12) || !near(logOfPct(v.DeltaPct), mean, 1e-12) {
					t.Errorf("constant log ratio %.17g: verdict %+.17g [%.17g, %.17g]", mean, logOfPct(v.DeltaPct), logOfPct(v.Lo), logOfPct(v.Hi))
				}
				if mean == 0 && (v.P != 1 || v.Significant) {
					t.Errorf("identical columns: p %g, %s", v.P, v.Text)
				}
			default:
				// A zero round: ComparePaired switches to signed ranks.
				if v.Method != MethodSignedRank {
					t.Errorf("a round with a zero: method %q, want %q", v.Method, MethodSignedRank)
				}
				checkHL(t, v, s.HL)
			}
		})
	}
}

// CompareSignedRank against wilcox.test(d, exact = TRUE, conf.int = TRUE)
// (or the same order statistics where R has no exact interval), and
// SignedRankP against the exact sign-flip p with mid-ranks.
func TestReferenceSignedRank(t *testing.T) {
	for _, s := range loadReference(t).Paired {
		t.Run(s.Name, func(t *testing.T) {
			v := CompareSignedRank(floats(s.A), floats(s.B), pointNull)
			checkHL(t, v, s.HL)
			if s.WilcoxonP != nil && !rel(v.P, float64(*s.WilcoxonP), 1e-9) {
				t.Errorf("p %.17g, wilcox.test %.17g", v.P, float64(*s.WilcoxonP))
			}
			if p, want := SignedRankP(floats(s.D)), float64(*s.SignedRankExactP); !rel(p, want, 1e-9) {
				t.Errorf("SignedRankP %.17g, exact %.17g", p, want)
			}
		})
	}
}

// CompareUnpaired against wilcox.test(log(b), log(a), exact = TRUE,
// conf.int = TRUE), or the same order statistics with ties; MannWhitneyP
// against the tie-aware exact permutation p.
func TestReferenceUnpaired(t *testing.T) {
	for _, s := range loadReference(t).Unpaired {
		t.Run(s.Name, func(t *testing.T) {
			a, b := floats(s.A), floats(s.B)
			v := CompareUnpaired(a, b, pointNull)
			if v.Method != MethodUnpaired {
				t.Fatalf("no verdict: %s", v.Text)
			}
			checkHL(t, v, s.HL)
			if s.WilcoxP != nil && !rel(v.P, float64(*s.WilcoxP), 1e-9) {
				t.Errorf("p %.17g, wilcox.test %.17g", v.P, float64(*s.WilcoxP))
			}
			if s.MannWhitneyExactPTails == nil {
				return
			}
			p, tails, central := MannWhitneyP(a, b), float64(*s.MannWhitneyExactPTails), float64(*s.MannWhitneyExactP)
			if !rel(p, tails, 1e-9) {
				t.Errorf("MannWhitneyP %.17g, exact (twice the smaller tail) %.17g", p, tails)
			}
			if tails != central {
				t.Logf("ties make the exact distribution asymmetric: twice the smaller tail %.4g, P(|U − nm/2| ≥ |u − nm/2|) %.4g", tails, central)
			}
		})
	}
}

// Describe's median and order-statistic interval on every input column.
func TestReferenceDescribe(t *testing.T) {
	r := loadReference(t)
	for _, s := range append(append([]refSet(nil), r.Paired...), r.Unpaired...) {
		for _, side := range []struct {
			name string
			xs   []num
			want *refDescribe
		}{{"a", s.A, s.DescribeA}, {"b", s.B, s.DescribeB}} {
			e := Describe(floats(side.xs), CIOptions{})
			w := side.want
			if e.N != w.N || e.Median != float64(w.Median) || e.Lo != float64(w.Lo) || e.Hi != float64(w.Hi) || !near(e.Coverage, float64(w.Coverage), 1e-12) {
				t.Errorf("%s, %s: n %d median %v [%v, %v] coverage %.17g; R n %d median %v [%v, %v] coverage %.17g",
					s.Name, side.name, e.N, e.Median, e.Lo, e.Hi, e.Coverage, w.N, float64(w.Median), float64(w.Lo), float64(w.Hi), float64(w.Coverage))
			}
		}
	}
}

// BenjaminiHochberg's decisions against p.adjust(p, "BH") ≤ q.
func TestReferenceBenjaminiHochberg(t *testing.T) {
	for _, s := range loadReference(t).BH {
		for _, c := range []struct {
			q    float64
			want []bool
		}{{0.05, s.Q05}, {0.10, s.Q10}} {
			if got := BenjaminiHochberg(floats(s.P), c.q); fmt.Sprint(got) != fmt.Sprint(c.want) {
				t.Errorf("%s at q = %g: %v, p.adjust %v", s.Name, c.q, got, c.want)
			}
		}
	}
}

// LinearFit, PowerFit and OffsetPowerFit against lm (and nls for the
// exponent where it lies inside the searched grid).
func TestReferenceFits(t *testing.T) {
	for _, s := range loadReference(t).Fit {
		t.Run(s.Name, func(t *testing.T) {
			xs, ys := floats(s.X), floats(s.Y)
			scale := 0.0 // intercepts are compared relative to the data
			for _, y := range ys {
				scale = math.Max(scale, math.Abs(y))
			}
			f, err := LinearFit(xs, ys)
			if err != nil || !rel(f.Slope, float64(s.Linear.Slope), 1e-9) || !near(f.Intercept, float64(s.Linear.Intercept), 1e-9*scale) || !near(f.R2, float64(s.Linear.R2), 1e-12) {
				t.Errorf("LinearFit %+v (%v), lm slope %.17g intercept %.17g r2 %.17g", f, err, float64(s.Linear.Slope), float64(s.Linear.Intercept), float64(s.Linear.R2))
			}
			k, pf, err := PowerFit(xs, ys)
			if err != nil || !rel(k, float64(s.Power.K), 1e-9) || !near(pf.Intercept, float64(s.Power.Intercept), 1e-9) || !near(pf.R2, float64(s.Power.R2), 1e-12) {
				t.Errorf("PowerFit k %.17g %+v (%v), lm on logs k %.17g intercept %.17g r2 %.17g", k, pf, err, float64(s.Power.K), float64(s.Power.Intercept), float64(s.Power.R2))
			}
			a, b, k, r2, err := OffsetPowerFit(xs, ys)
			w := s.OffsetPower
			if err != nil || k != float64(w.K) || !near(a, float64(w.A), 1e-9*scale) || !rel(b, float64(w.B), 1e-9) || !near(r2, float64(w.R2), 1e-9) {
				t.Errorf("OffsetPowerFit a %.17g b %.17g k %g r2 %.17g (%v); lm grid a %.17g b %.17g k %g r2 %.17g",
					a, b, k, r2, err, float64(w.A), float64(w.B), float64(w.K), float64(w.R2))
			}
			if s.NlsK != nil {
				if nk := float64(*s.NlsK); nk >= 0.05 && nk <= 3 && math.Abs(k-nk) > 0.01+1e-9 {
					t.Errorf("OffsetPowerFit k %g, nls %g: more than one grid step apart", k, nk)
				}
			}
		})
	}
}
