package suite

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cnibench/cnibench/datapath"
	"github.com/cnibench/cnibench/datapath/sweep"
	"github.com/cnibench/cnibench/results"
)

// ServiceScaleTest is the --tests name of the Service-scale sweep, a test
// of its own kind: it reprograms the datapath between measurements, so it
// does not mix with the plain tests in one run.
const ServiceScaleTest = "service-scale"

// ScaleTests are measured at every step of a Service-scale sweep:
// keep-alive and short-connection RPS, connection setup rate and latency,
// and request/response latency.
var ScaleTests = []string{"HTTP_RPS_C64", "HTTP_RPS_SHORT_C64", "TCP_CRR", "TCP_RR"}

// ScaleTarget is a target whose Service datapath a sweep can reprogram on
// every node (the lab and k8s targets implement it).
type ScaleTarget interface {
	Target
	// ScaleDatapath is the Service datapath of every node (one sweep
	// step programs and verifies them all) and the test Services every
	// step must keep.
	ScaleDatapath() (datapath.Datapath, []datapath.Service, error)
	// ScalePlacement is the pod-to-service placement the sweep measures
	// on: other-node where the target has two nodes, same-node where it
	// has one (a one-node cluster); the results record it.
	ScalePlacement() (string, error)
	// ConntrackUsage is the client node's conntrack count (-1: not loaded)
	// and size, and the eBPF flow map's entries.
	ConntrackUsage(ctx context.Context) (count, max, flows int, err error)
	// EphemeralPorts is the client's local port range size.
	// ConntrackUsage and EphemeralPorts return an error wrapping
	// errors.ErrUnsupported when the target cannot read the value: the
	// conntrack preflight is then skipped with a note in the results.
	EphemeralPorts() (int, error)
}

// ServiceScale is the Service-scale sweep schedule, for one or more
// scenarios each with its own Service datapath: at each step every
// datapath is programmed and verified, then the plan's tests (default
// ScaleTests) run in rounds with the scenarios interleaved (step k on A,
// B, C, then step k+1), so drift of a shared machine hits every datapath
// alike.
type ServiceScale struct {
	Sweep sweep.Options
	// Tests and Scenarios narrow the sweep to some of the plan's tests and
	// the run's scenarios (nil: all): a profile sweeps only the rows its
	// report has at scale.
	Tests, Scenarios []string
	// AfterRounds: the sweep follows the plan's rounds in a Sequence, so
	// the run keeps the plan's placements and step 0 (the test Services
	// alone) is not measured again: the rounds measured that state,
	// interleaved with every scenario (results.Sweep.AfterRounds).
	AfterRounds bool

	states []*scaleState
	start  time.Time
}

// scaleState is one scenario's sweep in progress.
type scaleState struct {
	sc        Scenario
	tgt       ScaleTarget
	sw        *sweep.Sweeper
	rec       int        // index in Run.Sweeps
	placement string     // ScalePlacement
	specs     []TestSpec // the tests measured at every step
}

// Reprograms implements Reprogrammer: up to the largest step's dummies.
func (s *ServiceScale) Reprograms() Reprogramming {
	rp := Reprogramming{Endpoints: s.Sweep.Endpoints, Verb: "sweep"}
	if len(s.Sweep.Steps) > 0 {
		rp.Services = slices.Max(s.Sweep.Steps)
	}
	return rp
}

// Estimate implements Schedule: the rounds of every scenario at every
// step (a datapath stopped early by --max-step-time takes less).
func (s *ServiceScale) Estimate(p *Plan, scenarios []string) time.Duration {
	n := 0
	for _, sc := range scenarios {
		if s.sweeps(sc) {
			n++
		}
	}
	tests := len(p.Specs)
	if s.Tests != nil {
		tests = len(s.Tests)
	}
	return time.Duration(p.Rounds*tests*n*s.measuredSteps()) * time.Duration(p.Duration+p.Warmup)
}

// sweeps tells whether the sweep reprograms scenario name.
func (s *ServiceScale) sweeps(name string) bool {
	return s.Scenarios == nil || slices.Contains(s.Scenarios, name)
}

// measuredSteps is how many steps take samples (step 0 not after rounds).
func (s *ServiceScale) measuredSteps() int {
	n := 0
	for _, st := range s.Sweep.Steps {
		if st != 0 || !s.AfterRounds {
			n++
		}
	}
	return n
}

// specs are the plan's tests the sweep measures at every step, in the
// plan's order; an asked test the plan lacks is an error.
func (s *ServiceScale) specs(p *Plan) ([]TestSpec, error) {
	if s.Tests == nil {
		return p.Specs, nil
	}
	var out []TestSpec
	for _, t := range s.Tests {
		i := slices.IndexFunc(p.Specs, func(sp TestSpec) bool { return sp.Name == t })
		if i < 0 {
			return nil, fmt.Errorf("the Service-scale sweep measures %s, which the plan does not have (--tests)", t)
		}
		out = append(out, p.Specs[i])
	}
	return out, nil
}

// ScalePlan resolves the sweep's plan: ScaleTests on one pod-to-service
// placement, 5 rounds unless given.
func ScalePlan(o Options) (*Plan, error) {
	return ReprogramPlan(o, ServiceScaleTest, "it reprograms the datapath between steps", ScaleTests)
}

// Order implements Schedule.
func (*ServiceScale) Order() string {
	return "Service-scale steps, then rounds, then tests, then scenarios (interleaved)"
}

// Prepare preflights every scenario (map capacity, conntrack) before
// anything is programmed.
func (s *ServiceScale) Prepare(ctx context.Context, r *Runner) (int, error) {
	if err := s.Sweep.Validate(); err != nil {
		return 0, err
	}
	specs, err := s.specs(r.Plan)
	if err != nil {
		return 0, err
	}
	run := r.run
	if !s.AfterRounds {
		run.Plan.Placements = nil // the placements the targets sweep on, below
	}
	s.states, s.start = nil, time.Now()
	for _, sc := range r.Scenarios {
		if !s.sweeps(sc.Name) {
			continue
		}
		st, rec, err := s.prepare(ctx, r, sc, specs)
		if err != nil {
			return 0, fmt.Errorf("scenario %s: %w", sc.Name, err)
		}
		addPlacement(run, st.placement)
		st.rec = len(run.Sweeps)
		run.Sweeps = append(run.Sweeps, rec)
		s.states = append(s.states, st)
	}
	if len(s.states) == 0 && s.AfterRounds {
		// A profile's rows at scale with none of their scenarios asked
		// (--scenarios): the rounds stand, the rows say why.
		run.Notes = append(run.Notes, fmt.Sprintf("the Service-scale rows were not measured: none of their scenarios (%s) is in this run", strings.Join(s.Scenarios, ", ")))
		return 0, nil
	}
	if len(s.states) == 0 {
		return 0, fmt.Errorf("the Service-scale sweep has none of its scenarios (%s) in the run (--scenarios)", strings.Join(s.Scenarios, ", "))
	}
	return s.measuredSteps() * len(s.states) * len(specs) * r.Plan.Rounds, nil
}

// prepare checks one scenario and makes its sweeper and sweep record.
func (s *ServiceScale) prepare(ctx context.Context, r *Runner, sc Scenario, specs []TestSpec) (*scaleState, results.Sweep, error) {
	tgt, dp, test, placement, err := reprogrammable(sc, "run a Service-scale sweep")
	if err != nil {
		return nil, results.Sweep{}, err
	}
	rec := results.Sweep{Scenario: sc.Name, Datapath: dp.Name(), Placement: placement, Options: s.Sweep, AfterRounds: s.AfterRounds}
	if rec.ConntrackExpected, rec.ConntrackMax, err = conntrackPreflight(ctx, specs, tgt, dp.Name()); unknown(err) {
		// A target that cannot read the table (a cluster) must not
		// fail the sweep: the check is skipped and says so.
		note := "conntrack preflight skipped: " + err.Error()
		rec.Notes = append(rec.Notes, note)
		r.progress("%s: %s\n", sc.Name, note)
	} else if err != nil {
		return nil, rec, err
	}
	sw, err := sweep.New(dp, test, s.Sweep)
	if err != nil {
		return nil, rec, err
	}
	rec.Options = sw.Options()
	return &scaleState{sc: sc, tgt: tgt, sw: sw, placement: placement, specs: specs}, rec, nil
}

// Measure programs each step on every datapath still sweeping, measures
// the step and records what the datapaths held afterwards. A datapath
// that fails a step stops sweeping; the others go on.
func (s *ServiceScale) Measure(ctx context.Context, r *Runner) error {
	var failed []error
	for k, n := range s.Sweep.Steps {
		measured, err := s.program(ctx, r, &failed)
		if err != nil {
			return err
		}
		if len(measured) == 0 {
			continue
		}
		if n == 0 && s.AfterRounds {
			// The rounds measured this state: programmed and verified
			// (its counts and memory recorded), not measured again.
			r.progress("[%s] step %d/%d (0 Services): measured by the rounds before\n", fmtElapsed(time.Since(s.start)), k+1, len(s.Sweep.Steps))
			continue
		}
		if err := s.measureStep(ctx, r, measured, k, n); err != nil {
			return err
		}
		s.recordConntrack(ctx, r, measured)
		if err := r.save(); err != nil {
			return err
		}
	}
	return errors.Join(failed...)
}

// program programs and verifies the next step on every datapath still
// sweeping and returns those that hold it; a failure joins failed.
func (s *ServiceScale) program(ctx context.Context, r *Runner, failed *[]error) ([]*scaleState, error) {
	var measured []*scaleState
	for _, st := range s.states {
		if st.sw.Done() {
			continue
		}
		rec := &r.run.Sweeps[st.rec]
		r.progress("[%s] ", fmtElapsed(time.Since(s.start)))
		step, err := st.sw.Next(ctx, r.progress)
		var stop *sweep.Stopped
		switch {
		case errors.As(err, &stop):
			rec.Stopped = stop.Reason
			r.progress("%s\n", stop.Reason)
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case err != nil:
			rec.Error = err.Error()
			*failed = append(*failed, fmt.Errorf("scenario %s: %w", st.sc.Name, err))
		default:
			rec.Steps = append(rec.Steps, results.SweepStep{Step: step, Conntrack: -1})
			measured = append(measured, st)
		}
		if err := r.save(); err != nil {
			return nil, err
		}
	}
	return measured, nil
}

// measureStep makes one Result per (test, scenario) at step k (n
// Services) and takes the plan's rounds of them.
func (s *ServiceScale) measureStep(ctx context.Context, r *Runner, measured []*scaleState, k, n int) error {
	specs := measured[0].specs                        // one list for every scenario
	index := make([]int, 0, len(specs)*len(measured)) // (test, scenario), in loop order
	for _, spec := range specs {
		for _, st := range measured {
			pl, err := st.tgt.Placement(st.placement)
			if err != nil {
				return fmt.Errorf("scenario %s: %w", st.sc.Name, err)
			}
			res := r.Plan.newResult(spec, pl, st.sc.Name)
			res.Services = n
			index = append(index, r.addResult(res))
		}
	}
	r.progress("[%s] step %d/%d (%d Services): measuring %d tests × %d rounds on %s\n", fmtElapsed(time.Since(s.start)),
		k+1, len(s.Sweep.Steps), n, len(specs), r.Plan.Rounds, scenarioNames(measured))
	for round := 1; round <= r.Plan.Rounds; round++ {
		i := 0
		for _, spec := range specs {
			for _, st := range measured {
				label := fmt.Sprintf("%d Services round %d %-18s %-16s ", n, round, spec.Name, st.sc.Name)
				if err := r.take(ctx, st.sc, index[i], round, label); err != nil {
					return err
				}
				i++
			}
		}
	}
	return nil
}

// reprogrammable is what the schedules that reprogram a datapath (the
// sweep, the churn) take from a scenario: its target as a ScaleTarget, the
// datapath of every node, the test Services to keep and the placement to
// measure on; what names the schedule in the error.
func reprogrammable(sc Scenario, what string) (ScaleTarget, datapath.Datapath, []datapath.Service, string, error) {
	tgt, ok := sc.Target.(ScaleTarget)
	if !ok {
		return nil, nil, nil, "", fmt.Errorf("its target cannot %s", what)
	}
	dp, test, err := tgt.ScaleDatapath()
	if err != nil {
		return nil, nil, nil, "", err
	}
	placement, err := tgt.ScalePlacement()
	return tgt, dp, test, placement, err
}

// addPlacement records a placement a reprogramming schedule measures on.
func addPlacement(run *results.Run, placement string) {
	if !slices.Contains(run.Plan.Placements, placement) {
		run.Plan.Placements = append(run.Plan.Placements, placement)
	}
}

// recordConntrack records what the datapaths hold after measuring.
func (s *ServiceScale) recordConntrack(ctx context.Context, r *Runner, measured []*scaleState) {
	for _, st := range measured {
		rec := &r.run.Sweeps[st.rec]
		last := &rec.Steps[len(rec.Steps)-1]
		count, _, flows, err := st.tgt.ConntrackUsage(ctx)
		switch {
		case unknown(err):
			count = ConntrackUnknown // noted once, at the preflight
		case err != nil:
			r.progress("%s: conntrack: %v\n", st.sc.Name, err)
		}
		last.Conntrack, last.FlowEntries = count, flows
	}
}

// ConntrackUnknown is a step's conntrack count when the target cannot
// read it (results.SweepStep.Conntrack).
const ConntrackUnknown = -2

// unknown tells whether a ScaleTarget said it cannot read a value (an
// error wrapping errors.ErrUnsupported or ErrUnsupported), as opposed to
// a read that failed.
func unknown(err error) bool {
	return err != nil && (errors.Is(err, errors.ErrUnsupported) || errors.Is(err, ErrUnsupported))
}

// newConnPorts are the test Service ports the new-connection tests dial.
var newConnPorts = map[string]string{"TCP_CRR": "tcp-crr", "HTTP_RPS_SHORT_C64": "http", "FORTIO_RPS_SHORT_C64": "http"}

// conntrackPreflight checks, for the datapaths that translate through
// netfilter, that node0's conntrack table can hold every connection the
// new-connection tests may leave behind: one per ephemeral port and
// Service port (TIME_WAIT entries outlive the sample). The table size is a
// host-wide sysctl, so --auto-size cannot raise it: it is an error.
func conntrackPreflight(ctx context.Context, specs []TestSpec, tgt ScaleTarget, dp string) (expected, max int, err error) {
	ports := map[string]bool{}
	for _, s := range specs {
		if p, ok := newConnPorts[s.Name]; ok && (s.HTTP == nil || !s.HTTP.KeepAlive) {
			ports[p] = true
		}
	}
	if len(ports) == 0 {
		return 0, 0, nil
	}
	eph, err := tgt.EphemeralPorts()
	if err != nil {
		return 0, 0, fmt.Errorf("conntrack preflight: %w", err)
	}
	_, max, _, err = tgt.ConntrackUsage(ctx)
	if err != nil {
		return 0, 0, fmt.Errorf("conntrack preflight: %w", err)
	}
	expected = eph * len(ports)
	netfilter := datapath.Netfilter(dp)
	if netfilter && max > 0 && expected > max {
		return expected, max, fmt.Errorf("%s: conntrack preflight: node0's table holds %d entries (nf_conntrack_max, a host-wide sysctl that --auto-size cannot raise) and the new-connection tests may keep %d (%d ephemeral ports × %d Service ports): raise net.netfilter.nf_conntrack_max on the host or leave out TCP_CRR and HTTP_RPS_SHORT_C64",
			dp, max, expected, eph, len(ports))
	}
	return expected, max, nil
}

func scenarioNames(sts []*scaleState) string {
	var n []string
	for _, s := range sts {
		n = append(n, s.sc.Name)
	}
	return strings.Join(n, ", ")
}

// fmtElapsed prints a duration as m:ss for progress lines.
func fmtElapsed(d time.Duration) string {
	s := int(d.Round(time.Second) / time.Second)
	return fmt.Sprintf("%d:%02d", s/60, s%60)
}
