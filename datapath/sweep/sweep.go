// Package sweep runs the Service-scale experiment on one Service datapath:
// cumulative steps of dummy Services around the test Services, and at each
// step program, verify (read the kernel back; never sleep and hope),
// record the programming time, memory and counts, then hand over to the
// caller to measure traffic. It stops a datapath's sweep with a note, not a
// hang, when the next step's programming time is predicted to exceed the
// limit.
package sweep

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/cnibench/cnibench/datapath"
	"github.com/cnibench/cnibench/stats"
)

// Defaults, as the issue and the reference reports use them.
var DefaultSteps = []int{0, 1000, 5000, 10000, 20000, 30000}

const (
	DefaultEndpoints   = 4
	DefaultMaxStepTime = 10 * time.Minute
	maxServices        = 1_000_000
)

// Options of one sweep.
type Options struct {
	Steps       []int         `json:"steps"`                 // Service counts, increasing; default DefaultSteps
	Endpoints   int           `json:"endpoints_per_service"` // per dummy Service; default 4
	Position    string        `json:"service_position"`      // random (default), first or last
	Seed        uint64        `json:"seed"`                  // for random placement; 0 draws one (recorded)
	MaxStepTime time.Duration `json:"max_step_time"`         // default 10 min
}

// Validate fills defaults and names the first bad value.
func (o *Options) Validate() error {
	if len(o.Steps) == 0 {
		o.Steps = slices.Clone(DefaultSteps)
	}
	for i, s := range o.Steps {
		if s < 0 || s > maxServices {
			return fmt.Errorf("--scale-steps: %d is out of range 0..%d", s, maxServices)
		}
		if i > 0 && s <= o.Steps[i-1] {
			return fmt.Errorf("--scale-steps must increase (steps are cumulative), got %d after %d", s, o.Steps[i-1])
		}
	}
	if o.Endpoints == 0 {
		o.Endpoints = DefaultEndpoints
	}
	if o.Endpoints < 1 || o.Endpoints > 1000 {
		return fmt.Errorf("--endpoints-per-service must be in 1..1000, got %d", o.Endpoints)
	}
	switch o.Position {
	case "":
		o.Position = datapath.PositionRandom
	case datapath.PositionRandom, datapath.PositionFirst, datapath.PositionLast:
	default:
		return fmt.Errorf("--service-position %q: want random, first or last", o.Position)
	}
	// A fixed default seed would put the test Service at the same spot in
	// every sweep (seed 0 lands it at ~1% of the list, which hides the
	// iptables walk); draw one, and the results record it for a rerun.
	if o.Position == datapath.PositionRandom && o.Seed == 0 {
		o.Seed = rand.Uint64() | 1
	}
	if o.MaxStepTime == 0 {
		o.MaxStepTime = DefaultMaxStepTime
	}
	if o.MaxStepTime < 0 {
		return fmt.Errorf("--max-step-time must be positive, got %s", o.MaxStepTime)
	}
	return nil
}

// Step is what one step found, before and besides the traffic numbers.
type Step struct {
	Services  int                   `json:"services"`            // dummy Services at this step
	Position  int                   `json:"test_position"`       // index of the first test Service in the programmed list
	Program   datapath.ProgramStats `json:"program"`             // generation and apply time
	Verify    time.Duration         `json:"verify"`              // time to read the kernel back
	Counts    datapath.Counts       `json:"counts"`              // what the kernel holds
	Expected  datapath.Counts       `json:"expected"`            // what it should hold
	Memory    datapath.Memory       `json:"memory"`              // datapath memory as the kernel reports it
	Predicted time.Duration         `json:"predicted,omitempty"` // programming time predicted before the step
	Sync      *Sync                 `json:"sync,omitempty"`      // how the step reached the nodes (cluster sweeps)
	Error     string                `json:"error,omitempty"`     // programming or verification failed: not measured
}

// Sync is how a step's Services reached the cluster's nodes: a cluster
// datapath's Verify waits until every node's Service proxy holds them, so
// a step is measured only once it is really programmed.
type Sync struct {
	Mode string `json:"mode"` // node (read on each node) or api (API server only)
	// APIWrites is the step's creates and deletes in the API server
	// (Writes requests, paced by --api-qps), NodeSync the time from their
	// end until the slowest node held the step: the two parts of a step.
	APIWrites time.Duration `json:"api_writes"`
	Writes    int           `json:"writes"`
	NodeSync  time.Duration `json:"node_sync"`
	// Latency is the step's per-Service programming latency.
	Latency *Latency   `json:"programming_latency,omitempty"`
	Nodes   []NodeSync `json:"nodes,omitempty"`
	Notes   []string   `json:"notes,omitempty"`
}

// Latency is, over the Services a step created, the time from a
// Service's last API write (its EndpointSlice acknowledged) until every
// node's datapath held it, as kube-burner's serviceLatency measures a
// Service's readiness: each node is read at least every Resolution apart
// (slow reads are spaced further), so each value is late by up to
// Resolution.
type Latency struct {
	Services   int           `json:"services"`             // Services measured
	Unresolved int           `json:"unresolved,omitempty"` // created but never seen on some node
	P50        time.Duration `json:"p50"`
	P99        time.Duration `json:"p99"`
	Max        time.Duration `json:"max"`
	Resolution time.Duration `json:"resolution"` // the longest gap between two reads of a node
}

// NodeSync is one node's sync at one step. Counts are the node's totals
// (the cluster's other Services included); Want is the baseline read
// before the first step plus the step's dummies.
type NodeSync struct {
	Node          string        `json:"node"`
	Mode          string        `json:"mode"` // node, or api when its probe cannot read the datapath
	Datapath      string        `json:"datapath,omitempty"`
	Time          time.Duration `json:"time"` // end of the API writes to the first matching read
	Services      int           `json:"services"`
	Endpoints     int           `json:"endpoints"`
	WantServices  int           `json:"want_services"`
	WantEndpoints int           `json:"want_endpoints"`
	BPFMapBytes   uint64        `json:"bpf_map_bytes,omitempty"`
	Note          string        `json:"note,omitempty"`
}

// SyncReporter is implemented by datapaths that verify a step on the
// cluster's nodes; the sweep records what the last Verify found.
type SyncReporter interface {
	SyncStats() *Sync
}

// Preflighter is implemented by datapaths with fixed capacity (BPF maps):
// it refuses a spec that would not fit, before anything is programmed.
type Preflighter interface {
	Preflight(spec datapath.Spec) error
}

// Measure is called after a step is programmed and verified; it runs the
// traffic tests of the step. An error stops the sweep.
type Measure func(ctx context.Context, step Step) error

// Progress receives one line per phase of each step; nil for silence.
type Progress func(format string, args ...any)

// Stopped says why a sweep ended before its last step.
type Stopped struct{ Reason string }

func (s *Stopped) Error() string { return s.Reason }

// Sweeper is a sweep driven one step at a time, so a caller can
// interleave several datapaths within a step (step k on A, B, C, then
// step k+1) and let machine drift hit them alike.
type Sweeper struct {
	dp    datapath.Datapath
	test  []datapath.Service
	opt   Options
	steps []Step
	next  int
	done  bool
}

// New validates opt and runs the capacity preflight for the largest step
// before anything is programmed: a clear error, never a silent overflow.
func New(dp datapath.Datapath, test []datapath.Service, opt Options) (*Sweeper, error) {
	if err := opt.Validate(); err != nil {
		return nil, err
	}
	last := opt.Steps[len(opt.Steps)-1]
	largest := buildSpec(test, last, opt)
	if err := largest.Validate(); err != nil {
		return nil, err
	}
	if pf, ok := dp.(Preflighter); ok {
		if err := pf.Preflight(largest); err != nil {
			return nil, fmt.Errorf("%s: capacity preflight for %d Services × %d endpoints: %w", dp.Name(), last, opt.Endpoints, err)
		}
	}
	return &Sweeper{dp: dp, test: test, opt: opt}, nil
}

// Options returns the validated options (defaults filled in).
func (s *Sweeper) Options() Options { return s.opt }

// Steps returns the steps done so far (programmed and verified).
func (s *Sweeper) Steps() []Step { return s.steps }

// Done tells whether the sweep has no step left to program (finished,
// stopped or failed).
func (s *Sweeper) Done() bool { return s.done || s.next >= len(s.opt.Steps) }

// Next programs and verifies the next step. It returns the step (also on
// failure, with Error set) and a *Stopped error, without programming
// anything, when the step's predicted programming time exceeds the limit,
// or after cancelling the step when its programming runs past the limit.
// After any error the sweep is done.
func (s *Sweeper) Next(ctx context.Context, progress Progress) (Step, error) {
	if s.Done() {
		return Step{}, errors.New("sweep: no step left")
	}
	if progress == nil {
		progress = func(string, ...any) {}
	}
	if err := ctx.Err(); err != nil {
		s.done = true
		return Step{}, err
	}
	i, n, dp := s.next, s.opt.Steps[s.next], s.dp
	st := Step{Services: n}
	if pred, ok := predict(s.steps, n); ok {
		st.Predicted = pred
		if pred > s.opt.MaxStepTime {
			s.done = true
			return st, &Stopped{Reason: fmt.Sprintf("%s: stopped before %d Services: programming predicted to take %s (> --max-step-time %s) from the steps so far",
				dp.Name(), n, roundDur(pred), s.opt.MaxStepTime)}
		}
	}
	s.next++
	spec, at := placeSpec(s.test, n, s.opt)
	st.Position = at
	label := fmt.Sprintf("%s step %d/%d: %d Services", dp.Name(), i+1, len(s.opt.Steps), n)
	if err := s.program(ctx, &st, spec, label, progress); err != nil {
		s.done = true
		return st, err
	}
	if err := s.verify(ctx, &st, spec, label, progress); err != nil {
		s.done = true
		return st, err
	}
	s.steps = append(s.steps, st)
	return st, nil
}

// program programs st's spec into the datapath within --max-step-time:
// a step that overruns it is cancelled and a *Stopped error; a failure
// is in st.Error too.
func (s *Sweeper) program(ctx context.Context, st *Step, spec datapath.Spec, label string, progress Progress) error {
	dp := s.dp
	pstart := time.Now()
	if st.Predicted > 0 {
		progress("%s: programming (predicted %s) ...", label, roundDur(st.Predicted))
	} else {
		progress("%s: programming ...", label)
	}
	// The prediction can be wrong (one step so far, or a datapath whose
	// cost grows faster than the fit): the limit also holds while the
	// step programs, cancelling it instead of waiting for it to end.
	pctx, cancel := context.WithTimeout(ctx, s.opt.MaxStepTime)
	ps, err := dp.Program(pctx, spec)
	overrun := err != nil && ctx.Err() == nil && errors.Is(pctx.Err(), context.DeadlineExceeded)
	cancel()
	st.Program = ps
	if overrun {
		st.Error = fmt.Sprintf("programming cancelled after --max-step-time %s", s.opt.MaxStepTime)
		progress(" cancelled after %s\n", roundDur(time.Since(pstart)))
		predicted := ""
		if st.Predicted > 0 {
			predicted = fmt.Sprintf(" (predicted %s)", roundDur(st.Predicted))
		}
		return &Stopped{Reason: fmt.Sprintf("%s: stopped while programming %d Services: not done after --max-step-time %s%s; the step was cancelled and is not measured",
			dp.Name(), st.Services, s.opt.MaxStepTime, predicted)}
	}
	if err != nil {
		st.Error = "programming: " + err.Error()
		if ctx.Err() != nil {
			progress(" interrupted after %s\n", roundDur(time.Since(pstart)))
		} else {
			progress(" failed after %s\n", roundDur(time.Since(pstart)))
		}
		return fmt.Errorf("%s: %w", label, err)
	}
	progress(" %s; verifying ...", roundDur(time.Since(pstart)))
	return nil
}

// verify reads the step back into st (counts, sync stats, memory) and
// fails when the kernel does not hold the spec's Services and endpoints.
func (s *Sweeper) verify(ctx context.Context, st *Step, spec datapath.Spec, label string, progress Progress) error {
	dp := s.dp
	vstart := time.Now()
	st.Expected = dp.Expected(spec)
	var err error
	st.Counts, err = dp.Verify(ctx)
	st.Verify = time.Since(vstart)
	if sr, ok := dp.(SyncReporter); ok {
		st.Sync = sr.SyncStats()
	}
	if err == nil {
		err = st.Counts.Holds(st.Expected)
	}
	if err != nil {
		st.Error = "verify: " + err.Error()
		progress(" FAILED\n")
		return fmt.Errorf("%s: verify: %w", label, err)
	}
	if st.Memory, err = dp.Memory(ctx); err != nil {
		st.Memory = datapath.Memory{}
	}
	progress(" ok (%s)\n", roundDur(st.Verify))
	return nil
}

// Run sweeps dp through opt.Steps with the test Services placed among the
// dummies, calling measure after each verified step. It returns every
// step done (also on error) and a *Stopped error when the
// programming-time limit cut the sweep short.
func Run(ctx context.Context, dp datapath.Datapath, test []datapath.Service, opt Options, measure Measure, progress Progress) ([]Step, error) {
	s, err := New(dp, test, opt)
	if err != nil {
		return nil, err
	}
	for !s.Done() {
		st, err := s.Next(ctx, progress)
		if err != nil {
			if st.Error != "" {
				return append(s.Steps(), st), err
			}
			return s.Steps(), err
		}
		if measure != nil {
			if err := measure(ctx, st); err != nil {
				return s.Steps(), err
			}
		}
	}
	return s.Steps(), nil
}

// buildSpec is the spec of a step with n dummies (test Services placed as
// the options say).
func buildSpec(test []datapath.Service, n int, opt Options) datapath.Spec {
	s, _ := placeSpec(test, n, opt)
	return s
}

func placeSpec(test []datapath.Service, n int, opt Options) (datapath.Spec, int) {
	all, at, err := datapath.Place(datapath.DummyServices(n, opt.Endpoints), test, opt.Position, opt.Seed)
	if err != nil { // positions were validated
		panic(err)
	}
	return datapath.Spec{Services: all}, at
}

// predict estimates the programming time of a step of n Services from the
// steps done: a power-law fit when two or more non-empty steps are known
// (kube-proxy's nftables layout grows super-linearly), else proportional
// scaling of the one known step.
func predict(done []Step, n int) (time.Duration, bool) {
	var xs, ys []float64
	for _, s := range done {
		if s.Services > 0 && s.Error == "" {
			xs = append(xs, float64(s.Services))
			ys = append(ys, float64(s.Program.Generate+s.Program.Apply))
		}
	}
	switch {
	case n == 0 || len(xs) == 0:
		return 0, false
	case len(xs) == 1:
		return time.Duration(ys[0] * float64(n) / xs[0]), true
	}
	k, f, err := stats.PowerFit(xs, ys)
	if err != nil {
		return 0, false
	}
	if k < 1 { // never predict that each Service gets cheaper
		last := len(xs) - 1
		return time.Duration(ys[last] * float64(n) / xs[last]), true
	}
	return time.Duration(math.Exp(f.Intercept) * math.Pow(float64(n), k)), true
}

// roundDur keeps three significant digits for progress lines (12.3ms,
// 1.23s), so sub-millisecond eBPF steps do not print as 0s.
func roundDur(d time.Duration) time.Duration {
	for r := time.Microsecond; r <= time.Minute; r *= 10 {
		if d < 1000*r {
			return d.Round(r)
		}
	}
	return d.Round(time.Second)
}

// IsStopped tells whether err is a sweep cut short by the time limit.
func IsStopped(err error) bool {
	var s *Stopped
	return errors.As(err, &s)
}
