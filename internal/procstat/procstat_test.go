package procstat

import (
	"math"
	"os"
	"strings"
	"testing"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-6 }

// A recorded /proc/stat of this 2-CPU machine: the aggregate line and
// both CPUs, in seconds (USER_HZ 100); intr, ctxt and the rest skipped.
func TestParseGolden(t *testing.T) {
	b, err := os.ReadFile("testdata/stat-2cpu.txt")
	if err != nil {
		t.Fatal(err)
	}
	s, err := Parse(string(b))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.PerCPU) != 2 {
		t.Fatalf("%d CPUs, want 2", len(s.PerCPU))
	}
	c0 := s.PerCPU[0]
	if !near(c0.User, 9962.37) || !near(c0.SoftIRQ, 7459.43) || !near(c0.Steal, 136.58) || !near(c0.Idle, 42921.32) {
		t.Errorf("cpu0 %+v", c0)
	}
	if !near(s.All.SoftIRQ, 13662.82) || !near(s.Sum([]int{0, 1}).SoftIRQ, 7459.43+6203.39) || s.Sum(nil) != s.All {
		t.Errorf("all %+v, sum %+v", s.All, s.Sum([]int{0, 1}))
	}
	if !near(c0.Busy(), 9962.37+746.76+10351.36+0+7459.43) {
		t.Errorf("busy %v", c0.Busy())
	}
}

// A kernel older than steal, a bad number and a text without the
// aggregate line are errors naming what is wrong.
func TestParseRejects(t *testing.T) {
	for text, want := range map[string]string{
		"cpu 1 2 3 4 5 6 7\n":                       "7 fields, want at least 8",
		"cpu 1 2 3 4 5 6 7 8\ncpu0 1 2 x 4 5 6 7 8": "cpu0: field 3",
		"cpu0 1 2 3 4 5 6 7 8\n":                    "no aggregate cpu line",
	} {
		if _, err := Parse(text); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", text, err, want)
		}
	}
}

// Sub and Add are state by state; a CPU missing from a reading adds 0.
func TestTimesArithmetic(t *testing.T) {
	a := Times{User: 3, SoftIRQ: 2, Idle: 5}
	b := Times{User: 1, SoftIRQ: 0.5, Idle: 1}
	if d := a.Sub(b); !near(d.User, 2) || !near(d.SoftIRQ, 1.5) || !near(d.Total(), 7.5) {
		t.Errorf("sub %+v", d)
	}
	s := Stat{PerCPU: map[int]Times{0: a}}
	if got := s.Sum([]int{0, 7}); got != a {
		t.Errorf("sum with an absent CPU %+v", got)
	}
}
