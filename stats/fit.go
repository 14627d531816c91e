package stats

import (
	"errors"
	"fmt"
	"math"
)

// Fit is a least-squares line y = Intercept + Slope·x with its coefficient
// of determination R2 (1 = every point on the line).
type Fit struct {
	Slope     float64 `json:"slope"`
	Intercept float64 `json:"intercept"`
	R2        float64 `json:"r2"`
	N         int     `json:"n"`
}

// At evaluates the fitted line.
func (f Fit) At(x float64) float64 { return f.Intercept + f.Slope*x }

// LinearFit fits a line through (xs[i], ys[i]). It needs two distinct xs.
// The Service-scale analysis uses it for per-connection cost against the
// number of Services (µs per 1,000 Services) and for programming time.
func LinearFit(xs, ys []float64) (Fit, error) {
	if len(xs) != len(ys) {
		return Fit{}, errors.New("linear fit: xs and ys differ in length")
	}
	n := float64(len(xs))
	if len(xs) < 2 {
		return Fit{}, errors.New("linear fit: need at least 2 points")
	}
	var mx, my float64
	for i := range xs {
		mx += xs[i]
		my += ys[i]
	}
	mx /= n
	my /= n
	var sxx, sxy, syy float64
	for i := range xs {
		dx, dy := xs[i]-mx, ys[i]-my
		sxx += dx * dx
		sxy += dx * dy
		syy += dy * dy
	}
	if sxx == 0 {
		return Fit{}, errors.New("linear fit: all x values are equal")
	}
	f := Fit{Slope: sxy / sxx, N: len(xs)}
	f.Intercept = my - f.Slope*mx
	if syy == 0 {
		f.R2 = 1 // a flat line through flat data
	} else {
		f.R2 = sxy * sxy / (sxx * syy)
	}
	return f, nil
}

// PowerFit fits y = a·x^k on the points with x > 0 and y > 0 (a line in
// log-log space) and returns k, the growth exponent (1 linear, 2
// quadratic), with the log-space fit. Programming time that grows with an
// exponent well above 1 is super-linear: each Service costs more than the
// last.
func PowerFit(xs, ys []float64) (exponent float64, f Fit, err error) {
	var lx, ly []float64
	for i := range xs {
		if i < len(ys) && xs[i] > 0 && ys[i] > 0 {
			lx = append(lx, math.Log(xs[i]))
			ly = append(ly, math.Log(ys[i]))
		}
	}
	f, err = LinearFit(lx, ly)
	if err != nil {
		return 0, f, errors.New("power fit: need at least 2 points with x > 0 and y > 0")
	}
	return f.Slope, f, nil
}

// Crossover finds where curve a overtakes curve b (or b overtakes a) over
// shared, increasing xs: the first x where a−b changes sign, linearly
// interpolated between the two points around it. ok is false when the
// curves never cross in the measured range (one is better everywhere).
func Crossover(xs, a, b []float64) (x float64, ok bool) {
	n := min(len(xs), len(a), len(b))
	for i := 1; i < n; i++ {
		d0, d1 := a[i-1]-b[i-1], a[i]-b[i]
		if d0 == 0 {
			return xs[i-1], true
		}
		if (d0 < 0) != (d1 < 0) || d1 == 0 {
			t := d0 / (d0 - d1)
			return xs[i-1] + t*(xs[i]-xs[i-1]), true
		}
	}
	return 0, false
}

// OffsetPowerFit fits y = a + b·x^k by least squares: for each k on a fine
// grid (0.05..3), a and b come from the linear fit of y on x^k, and the k
// with the smallest squared error wins. A fixed overhead a (a restore
// tool's start-up, say) no longer drags the exponent down as it does a
// log-log slope: y = 2000 + 0.1x is linear (k = 1), where the slope of
// log y on log x over 1,000..20,000 says 0.25. R2 is the fit's. It needs
// 4 points, one more than its parameters. The grid is the range k is
// known to: a k at its edge means "this far or further" (ExponentText),
// and data that do not grow at all (every y equal) give k = 0, "flat".
func OffsetPowerFit(xs, ys []float64) (a, b, k, r2 float64, err error) {
	if len(xs) != len(ys) || len(xs) < 4 {
		return 0, 0, 0, 0, errors.New("offset power fit: need at least 4 points")
	}
	flat := true
	for _, y := range ys {
		flat = flat && y == ys[0]
	}
	if flat {
		return ys[0], 0, 0, 1, nil
	}
	best := math.Inf(1)
	xk := make([]float64, len(xs))
	for step := int(MinExponent * 100); step <= int(MaxExponent*100); step++ {
		kk := float64(step) / 100
		for i, x := range xs {
			xk[i] = math.Pow(x, kk)
		}
		f, ferr := LinearFit(xk, ys)
		if ferr != nil {
			continue
		}
		var sse float64
		for i := range xs {
			e := ys[i] - (f.Intercept + f.Slope*xk[i])
			sse += e * e
		}
		if sse < best {
			best, a, b, k, r2 = sse, f.Intercept, f.Slope, kk, f.R2
		}
	}
	if math.IsInf(best, 1) {
		return 0, 0, 0, 0, errors.New("offset power fit: the points do not vary")
	}
	return a, b, k, r2, nil
}

// The range of exponents OffsetPowerFit searches.
const (
	MinExponent = 0.05
	MaxExponent = 3
)

// ExponentText prints a growth exponent from OffsetPowerFit, saying where
// it sits at the edge of the searched range instead of printing the edge
// as if it were the value: "flat", "≥ 3.00", "≤ 0.05", else "1.23".
func ExponentText(k float64) string {
	switch {
	case math.IsNaN(k):
		return "n/a"
	case k == 0:
		return "flat"
	case k >= MaxExponent:
		return fmt.Sprintf("≥ %.2f", float64(MaxExponent))
	case k <= MinExponent:
		return fmt.Sprintf("≤ %.2f", MinExponent)
	}
	return fmt.Sprintf("%.2f", k)
}
