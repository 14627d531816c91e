package report

import (
	"fmt"
	"math"
	"slices"

	"github.com/cnibench/cnibench/results"
)

// A published report's rows at Service counts (results.ReproducedCell
// Services: tke's Service scale and BPF map memory rows) are read from
// the sweep that followed the run's rounds: its step sections and the
// memory each step's datapath held.

// stepMissing says why scenario has no measured step at services ("" when
// it has one; 0 Services is the rounds' own state after them).
func stepMissing(run *results.Run, scenario string, services int) string {
	if services == 0 && sweptAfterRounds(run) {
		return ""
	}
	sw := sweepOf(run, scenario)
	switch {
	case sw == nil && len(run.Sweeps) == 0:
		return fmt.Sprintf("not measured in this run: no Service-scale sweep (the lab sweeps the rows at %s Services after the rounds; --tests, --placements or --target left it out)", thousands(services))
	case sw == nil:
		return fmt.Sprintf("not measured in this run: the Service-scale sweep did not include %s", scenario)
	}
	for _, st := range sw.Steps {
		if st.Services == services {
			return ""
		}
	}
	switch {
	case !slices.Contains(sw.Options.Steps, services):
		return fmt.Sprintf("not measured in this run: no step at %s Services (--scale-steps)", thousands(services))
	case sw.Stopped != "":
		return fmt.Sprintf("not measured: %s's sweep stopped before %s Services: %s", scenario, thousands(services), sw.Stopped)
	case sw.Error != "":
		return fmt.Sprintf("not measured: %s's sweep failed before %s Services: %s", scenario, thousands(services), sw.Error)
	}
	return fmt.Sprintf("not measured: the run ended (%s) before %s's sweep reached %s Services", run.Status, scenario, thousands(services))
}

// sweepOf is scenario's sweep in the run, nil for none.
func sweepOf(run *results.Run, scenario string) *results.Sweep {
	for i := range run.Sweeps {
		if run.Sweeps[i].Scenario == scenario {
			return &run.Sweeps[i]
		}
	}
	return nil
}

// mapMemoryLine fills a BPF map memory cell from its scenario's sweep
// step: one reading of the maps' memlock, so no interval.
func mapMemoryLine(run *results.Run, l ReproducedLine, c results.ReproducedCell) ReproducedLine {
	scenario := c.Scenario
	if scenario == "" {
		scenario = scenarioNames(run)[0]
	}
	l.As = fmt.Sprintf("the datapath's BPF maps (memlock) at the sweep's step of %s Services · %s", thousands(c.Services), scenario)
	if why := stepMissing(run, scenario, c.Services); why != "" {
		l.NotMeasured = why
		return l
	}
	if c.Services == 0 && sweepOf(run, scenario) == nil {
		l.NotMeasured = "not measured in this run: " + scenario + " was not swept, and only the sweep reads its maps' memory"
		return l
	}
	for _, st := range sweepOf(run, scenario).Steps {
		if st.Services != c.Services {
			continue
		}
		if st.Memory.BPFMapBytes <= 0 {
			l.NotMeasured = fmt.Sprintf("not measured: %s's datapath has no BPF maps to read at %s Services", scenario, thousands(st.Services))
			return l
		}
		mb := float64(st.Memory.BPFMapBytes) / 1e6
		nan := Num(math.NaN())
		l.Ours, l.Unit = &Value{N: 1, Display: Num(mb), Median: Num(mb), Lo: nan, Hi: nan, Coverage: nan, Samples: []Num{Num(mb)}}, "MB"
		if l.Published != nil {
			l.Ratio, l.RatioLo, l.RatioHi, l.RatioText = oursOverPublished(l.Ours, l.Unit, *l.Published)
		}
		return l
	}
	return l
}
