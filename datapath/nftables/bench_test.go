package nftables

import (
	"testing"

	"github.com/cnibench/cnibench/lab/labtest"
)

// TestProgramTimes measures a full sync from an empty namespace at each
// size in CNB_PROGRAM_BENCH (e.g. "1000,5000,10000" Services × 4
// endpoints), for both layouts; bench/services-program.sh runs it. It is
// a measurement, skipped unless asked for.
func TestProgramTimes(t *testing.T) {
	sizes := labtest.BenchSizes(t)
	for _, b := range layouts {
		if !labtest.BenchWants(b.name) {
			continue
		}
		for _, n := range sizes {
			d := newOrSkip(t, labtest.ScratchNS(t, "nfbench"), b.opts)
			m := labtest.MeasureProgram(t, d, n)
			t.Logf("PROGRAM datapath=%s services=%d endpoints=%d generate=%.3fs apply=%.3fs bytes=%d verify=%.3fs close=%.3fs rules=%d chains=%d elements=%d ruleset_bytes=%d",
				d.Name(), n, m.Spec.Endpoints(), m.Stats.Generate.Seconds(), m.Stats.Apply.Seconds(), m.Stats.Bytes,
				m.Verify.Seconds(), m.Close.Seconds(), m.Counts.Rules, m.Counts.Chains, m.Counts.Elements, m.Memory.RulesetBytes)
		}
	}
}
