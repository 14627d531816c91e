package sweep

import (
	"testing"
	"time"

	"github.com/cnibench/cnibench/datapath"
)

func step(n int, d time.Duration) Step {
	return Step{Services: n, Program: datapath.ProgramStats{Apply: d}}
}

// The prediction follows the growth the steps so far show: proportional
// from one step, the fitted exponent from several (super-linear for
// kube-proxy's nftables layout), never cheaper per Service.
func TestPredict(t *testing.T) {
	if _, ok := predict([]Step{step(0, time.Millisecond)}, 1000); ok {
		t.Fatal("predicted from the empty step alone")
	}
	if d, ok := predict([]Step{step(0, 0), step(1000, time.Second)}, 5000); !ok || d != 5*time.Second {
		t.Fatalf("one step: %s, want 5s", d)
	}
	// Quadratic: 7 s at 5,000 and 28 s at 10,000 → 112 s at 20,000.
	d, ok := predict([]Step{step(5000, 7*time.Second), step(10000, 28*time.Second)}, 20000)
	if !ok || d < 111*time.Second || d > 113*time.Second {
		t.Fatalf("quadratic: %s, want ~112s", d)
	}
	// Sub-linear data is extrapolated linearly from the last step.
	d, _ = predict([]Step{step(1000, 2*time.Second), step(2000, 3*time.Second)}, 4000)
	if d != 6*time.Second {
		t.Fatalf("sub-linear: %s, want 6s", d)
	}
}

func TestOptionsValidate(t *testing.T) {
	o := Options{}
	if err := o.Validate(); err != nil || len(o.Steps) != 6 || o.Endpoints != 4 || o.Position != "random" || o.MaxStepTime != DefaultMaxStepTime {
		t.Fatalf("defaults %+v %v", o, err)
	}
	for _, bad := range []Options{
		{Steps: []int{0, 1000, 500}},
		{Steps: []int{-1}},
		{Endpoints: -2},
		{Position: "middle"},
		{MaxStepTime: -time.Second},
	} {
		if err := bad.Validate(); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}
