package stats

import (
	"math"
	"testing"
)

// Quantiles of Student's t against published tables (two-sided 95% and
// 99% critical values).
func TestTQuantile(t *testing.T) {
	for _, c := range []struct{ q, df, want float64 }{
		{0.975, 1, 12.7062}, {0.975, 2, 4.3027}, {0.975, 4, 2.7764}, {0.975, 9, 2.2622},
		{0.975, 29, 2.0452}, {0.995, 4, 4.6041}, {0.95, 4, 2.1318}, {0.975, 1000, 1.9623},
	} {
		got := tQuantile(c.q, c.df)
		if math.Abs(got-c.want) > 5e-4 {
			t.Errorf("t(%g, df %g) = %.5f, want %.4f", c.q, c.df, got, c.want)
		}
		if back := tCDF(got, c.df); math.Abs(back-c.q) > 1e-9 {
			t.Errorf("tCDF(tQuantile(%g)) = %g", c.q, back)
		}
	}
	if q := tQuantile(0.025, 4); math.Abs(q+2.7764) > 5e-4 {
		t.Errorf("lower quantile %g", q)
	}
}
