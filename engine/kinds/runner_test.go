package kinds

import (
	"math"
	"testing"
	"time"
)

// The load kinds' shared checks keep their errors as each kind spelled
// them, and fill the defaults only when unset.
func TestValidateHelpers(t *testing.T) {
	n := 0
	if err := ValidateCount("httpload", "connections", &n, 64, 100); err != nil || n != 64 {
		t.Errorf("ValidateCount(0) = %v, %d; want nil, 64", err, n)
	}
	n = 101
	if err := ValidateCount("httpload", "connections", &n, 64, 100); err == nil || err.Error() != "httpload: connections must be in 1..100, got 101" {
		t.Errorf("ValidateCount(101) = %v", err)
	}
	for _, q := range []float64{0, 1000} {
		if err := ValidateRate("dnsload", q); err != nil {
			t.Errorf("ValidateRate(%v) = %v", q, err)
		}
	}
	for _, q := range []float64{-1, math.NaN(), math.Inf(1)} {
		if err := ValidateRate("dnsload", q); err == nil {
			t.Errorf("ValidateRate(%v) = nil", q)
		}
	}
	var d Duration
	if err := ValidateTimeout("fortio", &d, 5*time.Second); err != nil || d != Duration(5*time.Second) {
		t.Errorf("ValidateTimeout(0) = %v, %s", err, time.Duration(d))
	}
	d = -1
	if err := ValidateTimeout("fortio", &d, 5*time.Second); err == nil || err.Error() != "fortio: timeout must not be negative, got -1ns" {
		t.Errorf("ValidateTimeout(-1) = %v", err)
	}
	r := RunnerOptions{Duration: Duration(time.Second)}
	if err := r.ValidateWithShare("TCP_CRR", &PortShare{}); err == nil || err.Error()[:9] != "TCP_CRR: " {
		t.Errorf("ValidateWithShare(empty share) = %v", err)
	}
	if err := r.ValidateWithShare("TCP_CRR", nil); err != nil {
		t.Errorf("ValidateWithShare(nil) = %v", err)
	}
}
