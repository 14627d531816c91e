package iptables

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/datapath"
)

// TestProgramTimes measures a full sync from an empty namespace at each
// size in CNB_PROGRAM_BENCH (e.g. "1000,5000,10000" Services × 4
// endpoints), for both backends; bench/services-program.sh runs it. It is
// a measurement, skipped unless asked for.
func TestProgramTimes(t *testing.T) {
	sizes := benchSizes(t)
	for _, b := range backends {
		for _, n := range sizes {
			ns := scratchNS(t, "ipbench")
			d := newOrSkip(t, ns, b.opts)
			spec := datapath.Spec{Services: datapath.DummyServices(n, 4)}
			st, err := d.Program(context.Background(), spec)
			if err != nil {
				t.Fatal(err)
			}
			t0 := time.Now()
			got, err := d.Verify(context.Background())
			verify := time.Since(t0)
			if err != nil {
				t.Fatal(err)
			}
			mem, err := d.Memory(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			t0 = time.Now()
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
			t.Logf("PROGRAM datapath=%s services=%d endpoints=%d generate=%.3fs apply=%.3fs bytes=%d verify=%.3fs close=%.3fs rules=%d chains=%d ruleset_bytes=%d",
				d.Name(), n, spec.Endpoints(), st.Generate.Seconds(), st.Apply.Seconds(), st.Bytes,
				verify.Seconds(), time.Since(t0).Seconds(), got.Rules, got.Chains, mem.RulesetBytes)
		}
	}
}

func benchSizes(t *testing.T) []int {
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
