package stats

import "math"

// Student's t distribution, for the paired interval (ComparePaired). The
// CDF comes from the regularized incomplete beta function (continued
// fraction, as in Numerical Recipes' betacf); the quantile is found by
// bisection on it, which is exact to float precision and needs no table.

// tCDF is P(T ≤ t) for Student's t with df degrees of freedom.
func tCDF(t, df float64) float64 {
	x := df / (df + t*t)
	tail := 0.5 * regIncBeta(df/2, 0.5, x) // P(T > |t|)
	if t >= 0 {
		return 1 - tail
	}
	return tail
}

// tQuantile is the q-quantile of Student's t with df degrees of freedom.
func tQuantile(q, df float64) float64 {
	if q == 0.5 {
		return 0
	}
	if q < 0.5 {
		return -tQuantile(1-q, df)
	}
	lo, hi := 0.0, 1.0
	for tCDF(hi, df) < q {
		hi *= 2
	}
	for range 200 {
		mid := (lo + hi) / 2
		if tCDF(mid, df) < q {
			lo = mid
		} else {
			hi = mid
		}
		if hi-lo < 1e-12*hi {
			break
		}
	}
	return (lo + hi) / 2
}

// regIncBeta is the regularized incomplete beta function I_x(a, b).
func regIncBeta(a, b, x float64) float64 {
	switch {
	case x <= 0:
		return 0
	case x >= 1:
		return 1
	}
	la, _ := math.Lgamma(a + b)
	lb, _ := math.Lgamma(a)
	lc, _ := math.Lgamma(b)
	front := math.Exp(la - lb - lc + a*math.Log(x) + b*math.Log(1-x))
	if x < (a+1)/(a+b+2) {
		return front * betaCF(a, b, x) / a
	}
	return 1 - front*betaCF(b, a, 1-x)/b
}

// betaCF evaluates the continued fraction of the incomplete beta function
// by the modified Lentz method.
func betaCF(a, b, x float64) float64 {
	const tiny = 1e-300
	qab, qap, qam := a+b, a+1, a-1
	c, d := 1.0, 1-qab*x/qap
	if math.Abs(d) < tiny {
		d = tiny
	}
	d = 1 / d
	h := d
	for m := 1; m <= 300; m++ {
		fm := float64(m)
		m2 := 2 * fm
		aa := fm * (b - fm) * x / ((qam + m2) * (a + m2))
		d = 1 + aa*d
		if math.Abs(d) < tiny {
			d = tiny
		}
		c = 1 + aa/c
		if math.Abs(c) < tiny {
			c = tiny
		}
		d = 1 / d
		h *= d * c
		aa = -(a + fm) * (qab + fm) * x / ((a + m2) * (qap + m2))
		d = 1 + aa*d
		if math.Abs(d) < tiny {
			d = tiny
		}
		c = 1 + aa/c
		if math.Abs(c) < tiny {
			c = tiny
		}
		d = 1 / d
		del := d * c
		h *= del
		if math.Abs(del-1) < 1e-15 {
			break
		}
	}
	return h
}

// tSF is P(T > t), computed from the tail itself so that tiny p-values
// keep their digits (1 − tCDF would round everything below 1e-16 to 0).
func tSF(t, df float64) float64 {
	if math.IsNaN(t) {
		return 1
	}
	tail := 0.5 * regIncBeta(df/2, 0.5, df/(df+t*t)) // P(T > |t|)
	if t >= 0 {
		return tail
	}
	return 1 - tail
}
