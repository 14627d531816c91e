package iptables

import (
	"testing"

	"github.com/cnibench/cnibench/datapath"
	"github.com/cnibench/cnibench/lab/labtest"
)

// TestProgramTimes measures a full sync from an empty namespace at each
// size in CNB_PROGRAM_BENCH (e.g. "1000,5000,10000" Services × 4
// endpoints), for both backends; bench/services-program.sh runs it. It is
// a measurement, skipped unless asked for.
func TestProgramTimes(t *testing.T) {
	name := func(i int) string { return backends[i].name }
	labtest.BenchPrograms(t, len(backends), name, func(i int) datapath.Datapath {
		return newOrSkip(t, labtest.ScratchNS(t, "ipbench"), backends[i].opts)
	}, false)
}
