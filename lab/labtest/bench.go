package labtest

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/datapath"
)

// BenchSizes is the list of Service counts in CNB_PROGRAM_BENCH (e.g.
// "1000,5000,10000"); it skips the test when the variable is not set, as
// the programming-time measurements run only when asked for.
func BenchSizes(t *testing.T) []int {
	env := os.Getenv("CNB_PROGRAM_BENCH")
	if env == "" {
		t.Skip("set CNB_PROGRAM_BENCH=1000,5000,10000 to measure programming times")
	}
	var sizes []int
	for _, f := range strings.Split(env, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			t.Fatalf("CNB_PROGRAM_BENCH: bad size %q", f)
		}
		sizes = append(sizes, n)
	}
	return sizes
}

// BenchWants tells whether the programming benchmark measures the named
// datapath: CNB_PROGRAM_ONLY (comma-separated names) narrows it, so one
// slow layout does not have to be re-measured to get another's curve.
func BenchWants(name string) bool {
	only := os.Getenv("CNB_PROGRAM_ONLY")
	if only == "" {
		return true
	}
	for _, f := range strings.Split(only, ",") {
		if strings.TrimSpace(f) == name {
			return true
		}
	}
	return false
}

// ProgramTimes is one measured full sync from an empty namespace.
type ProgramTimes struct {
	Spec   datapath.Spec
	Stats  datapath.ProgramStats
	Verify time.Duration // reading the kernel back
	Close  time.Duration // removing everything
	Counts datapath.Counts
	Memory datapath.Memory
}

// MeasureProgram programs n dummy Services × 4 endpoints into d, then
// times Verify and Close; the caller prints the line its script parses.
func MeasureProgram(t *testing.T, d datapath.Datapath, n int) ProgramTimes {
	t.Helper()
	m := ProgramTimes{Spec: datapath.Spec{Services: datapath.DummyServices(n, 4)}}
	var err error
	if m.Stats, err = d.Program(context.Background(), m.Spec); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	m.Counts, err = d.Verify(context.Background())
	m.Verify = time.Since(t0)
	if err != nil {
		t.Fatal(err)
	}
	if m.Memory, err = d.Memory(context.Background()); err != nil {
		t.Fatal(err)
	}
	t0 = time.Now()
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	m.Close = time.Since(t0)
	return m
}

// BenchPrograms is a datapath package's TestProgramTimes: at each size in
// CNB_PROGRAM_BENCH it measures a full sync into open(i), a new datapath
// of the i-th of the package's n backends, named name(i), in a scratch
// namespace, for every name BenchWants, and logs the PROGRAM line
// bench/services-program.sh parses; elements adds the set and map
// elements, for a datapath that has them.
func BenchPrograms(t *testing.T, n int, name func(i int) string, open func(i int) datapath.Datapath, elements bool) {
	t.Helper()
	sizes := BenchSizes(t)
	for i := range n {
		if !BenchWants(name(i)) {
			continue
		}
		for _, size := range sizes {
			d := open(i)
			m := MeasureProgram(t, d, size)
			line := fmt.Sprintf("PROGRAM datapath=%s services=%d endpoints=%d generate=%.3fs apply=%.3fs bytes=%d verify=%.3fs close=%.3fs rules=%d chains=%d",
				d.Name(), size, m.Spec.Endpoints(), m.Stats.Generate.Seconds(), m.Stats.Apply.Seconds(), m.Stats.Bytes,
				m.Verify.Seconds(), m.Close.Seconds(), m.Counts.Rules, m.Counts.Chains)
			if elements {
				line += fmt.Sprintf(" elements=%d", m.Counts.Elements)
			}
			t.Logf("%s ruleset_bytes=%d", line, m.Memory.RulesetBytes)
		}
	}
}
