package stats

import (
	"math"
	"testing"
)

func TestLinearFitKnownLine(t *testing.T) {
	xs := []float64{0, 1000, 5000, 10000, 20000, 30000}
	ys := make([]float64, len(xs))
	for i, x := range xs {
		ys[i] = 50 + 0.004*x // 4 µs per 1,000 Services over a 50 µs base
	}
	f, err := LinearFit(xs, ys)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(f.Slope-0.004) > 1e-12 || math.Abs(f.Intercept-50) > 1e-9 || math.Abs(f.R2-1) > 1e-12 {
		t.Fatalf("fit %+v, want slope 0.004 intercept 50 r2 1", f)
	}
	// Noise lowers r².
	ys[2] += 40
	f, _ = LinearFit(xs, ys)
	if f.R2 >= 0.99 || f.R2 <= 0.5 {
		t.Fatalf("r2 %.3f with one outlier, want between 0.5 and 0.99", f.R2)
	}
	if _, err := LinearFit([]float64{1}, []float64{1}); err == nil {
		t.Fatal("one point accepted")
	}
	if _, err := LinearFit([]float64{2, 2}, []float64{1, 3}); err == nil {
		t.Fatal("equal xs accepted")
	}
}

func TestPowerFitExponent(t *testing.T) {
	xs := []float64{0, 1000, 2000, 5000, 10000}
	quad := make([]float64, len(xs))
	lin := make([]float64, len(xs))
	for i, x := range xs {
		quad[i] = 3e-7 * x * x
		lin[i] = 0.002 * x
	}
	if k, _, err := PowerFit(xs, quad); err != nil || math.Abs(k-2) > 1e-9 {
		t.Fatalf("quadratic exponent %v (%v), want 2", k, err)
	}
	if k, _, err := PowerFit(xs, lin); err != nil || math.Abs(k-1) > 1e-9 {
		t.Fatalf("linear exponent %v (%v), want 1", k, err)
	}
}

func TestCrossover(t *testing.T) {
	xs := []float64{0, 1000, 5000, 10000}
	// iptables starts faster but falls; eBPF is flat.
	ipt := []float64{110, 105, 90, 70}
	bpf := []float64{100, 100, 100, 100}
	x, ok := Crossover(xs, ipt, bpf)
	if !ok || math.Abs(x-(1000+4000*(5.0/15))) > 1e-9 {
		t.Fatalf("crossover %v %v, want 2333.3", x, ok)
	}
	if _, ok := Crossover(xs, bpf, []float64{90, 90, 90, 90}); ok {
		t.Fatal("parallel curves reported a crossover")
	}
}

// A fixed overhead does not hide linear or quadratic growth.
func TestOffsetPowerFit(t *testing.T) {
	xs := []float64{0, 1000, 5000, 10000, 20000}
	for _, c := range []struct {
		name string
		f    func(x float64) float64
		k    float64
	}{
		{"linear with overhead", func(x float64) float64 { return 2000 + 0.1*x }, 1},
		{"quadratic with overhead", func(x float64) float64 { return 50 + 1e-4*x*x }, 2},
		{"n log n-ish", func(x float64) float64 { return 10 + 0.01*x*math.Log(x+1) }, 1.1},
	} {
		var ys []float64
		for _, x := range xs {
			ys = append(ys, c.f(x))
		}
		_, _, k, r2, err := OffsetPowerFit(xs, ys)
		if err != nil || math.Abs(k-c.k) > 0.06 || r2 < 0.999 {
			t.Errorf("%s: k %.2f r² %.4f (%v), want k ≈ %.2f", c.name, k, r2, err, c.k)
		}
	}
	if p, _, _ := PowerFit(xs[1:], []float64{2100, 2500, 3000, 4000}); p > 0.3 {
		t.Errorf("the log-log slope this replaces: %.2f (it says 0.25 for a linear curve)", p)
	}
	if _, _, _, _, err := OffsetPowerFit(xs[:3], []float64{1, 2, 3}); err == nil {
		t.Error("3 points fitted")
	}
}
