package suite

import (
	"context"
	"time"

	"github.com/cnibench/cnibench/results"
)

// Schedule decides what a run measures and in which order, over the
// Runner's one sample loop (Runner.take): Rounds, ServiceScale, Churn and
// Twins. What a schedule needs of the scenarios and how long it takes are
// said by the schedule itself, so the command line and the targets ask it
// instead of knowing each schedule (Reprogrammer, Expander below).
type Schedule interface {
	// Order is the run's Plan.Order: how samples are interleaved.
	Order() string
	// Prepare runs before anything is written or programmed: it checks
	// the scenarios (an error refuses the run), records what it plans in
	// the run and returns how many samples it will take.
	Prepare(ctx context.Context, r *Runner) (samples int, err error)
	// Measure takes the samples through r.take, in its order, and returns
	// ctx's error when cancelled.
	Measure(ctx context.Context, r *Runner) error
	// Estimate is the measuring time of plan p on the named scenarios
	// (programming and setup left out), for the run's header line.
	Estimate(p *Plan, scenarios []string) time.Duration
}

// Reprogramming is what a schedule that reprograms the Service datapath
// asks of every scenario: a Service datapath holding up to Services dummy
// Services of Endpoints endpoints each beside the test Services, measured
// on one pod-to-service placement (ReprogramPlan).
type Reprogramming struct {
	Services, Endpoints int
	// Verb says what the schedule does to the datapath, for errors
	// ("no Service datapath to churn").
	Verb string
	// Live: the Services change during the samples, so every change is
	// timed as it is held (a cluster then verifies on the nodes).
	Live bool
	// KeepPlacements: the run also measures the plan's placements in
	// rounds (a Sequence), so the targets keep them all instead of the
	// one the reprogramming measures on.
	KeepPlacements bool
}

// Reprogrammer is a Schedule that reprograms the Service datapath.
type Reprogrammer interface {
	Reprograms() Reprogramming
}

// Expander is a Schedule that measures scenarios beside the ones asked
// for (the churn: each scenario beside its churned twin).
type Expander interface {
	Expand(names []results.ScenarioName) []results.ScenarioName
}

// ReprogrammingOf is what s asks of the scenarios' Service datapaths; nil
// when s does not reprogram them.
func ReprogrammingOf(s Schedule) *Reprogramming {
	if q, ok := s.(Sequence); ok && !q.reprograms() {
		return nil
	}
	if rp, ok := s.(Reprogrammer); ok {
		r := rp.Reprograms()
		return &r
	}
	return nil
}

// ExpandScenarios is names with what s measures beside them.
func ExpandScenarios(s Schedule, names []results.ScenarioName) []results.ScenarioName {
	if e, ok := s.(Expander); ok {
		return e.Expand(names)
	}
	return names
}
