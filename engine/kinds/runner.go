package kinds

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"time"
)

// RunnerOptions is what every kind's options have, embedded in them as
// fortio's RunnerOptions is in its runners' options: the measured time
// and the unmeasured warm-up before it. The runner reads them from any
// kind's options (a sample's time bound) through Runner. What else the
// engines take looks alike but is not the same thing — flows, connections
// and queries in flight; bits and requests per second — so it stays in
// each kind's own options, under the names results.json has always used.
type RunnerOptions struct {
	Duration Duration `json:"duration"`         // measured time, after warmup
	Warmup   Duration `json:"warmup,omitempty"` // run but not counted
	// StartAt, when set, is when the run starts (its warm-up first): the
	// runner gives the pairs of a sample one start time, which each agent
	// waits for (WaitStart), so the pairs' intervals line up whatever each
	// call's latency. Never stored in results.json (zero there).
	StartAt time.Time `json:"start_at,omitzero"`
}

// Runner gives generic code the base of a kind's options.
func (o *RunnerOptions) Runner() *RunnerOptions { return o }

// Validate checks the times; who names the options in the error
// ("TCP_RR", "httpload").
func (o *RunnerOptions) Validate(who string) error {
	if o.Duration <= 0 {
		return fmt.Errorf("%s: duration must be positive, got %s", who, time.Duration(o.Duration))
	}
	if o.Warmup < 0 {
		return fmt.Errorf("%s: warmup must not be negative, got %s", who, time.Duration(o.Warmup))
	}
	return nil
}

// ValidateWithShare checks the times, then share (nil: the whole range),
// for the kinds whose clients open connections on a share of the ports;
// who names the options in either error.
func (o *RunnerOptions) ValidateWithShare(who string, share *PortShare) error {
	if err := o.Validate(who); err != nil {
		return err
	}
	if err := share.Validate(); err != nil {
		return fmt.Errorf("%s: %w", who, err)
	}
	return nil
}

// ValidateCount sets *n to def when it is 0 and checks that it is in
// 1..max; what names the count in the error ("connections"), after who.
func ValidateCount(who, what string, n *int, def, max int) error {
	if *n == 0 {
		*n = def
	}
	if *n < 1 || *n > max {
		return fmt.Errorf("%s: %s must be in 1..%d, got %d", who, what, max, *n)
	}
	return nil
}

// ValidateRate checks a load kind's total target rate: 0 runs at max rate
// (closed loop), else it must be a positive finite rate (open loop).
func ValidateRate(who string, qps float64) error {
	if qps < 0 || math.IsNaN(qps) || math.IsInf(qps, 0) {
		return fmt.Errorf("%s: qps must be 0 (max rate) or a positive rate, got %v", who, qps)
	}
	return nil
}

// ValidateTimeout checks a load kind's timeout of one operation (a
// request, a query) and sets it to def when it is 0.
func ValidateTimeout(who string, timeout *Duration, def time.Duration) error {
	if *timeout < 0 {
		return fmt.Errorf("%s: timeout must not be negative, got %s", who, time.Duration(*timeout))
	}
	if *timeout == 0 {
		*timeout = Duration(def)
	}
	return nil
}

// MaxStartLead is how far ahead a StartAt may be: further means the
// clocks of the caller and the agent disagree, or a bug.
const MaxStartLead = time.Minute

// WaitStart waits until options' StartAt (at once when unset or past);
// it fails when ctx ends first or StartAt is over MaxStartLead ahead.
func WaitStart(ctx context.Context, options any) error {
	o, ok := options.(Runs)
	if !ok || o.Runner().StartAt.IsZero() {
		return nil
	}
	wait := time.Until(o.Runner().StartAt)
	if wait > MaxStartLead {
		return fmt.Errorf("start time %s is %s ahead, over %s: do the clocks agree?", o.Runner().StartAt.Format(time.RFC3339Nano), wait.Round(time.Millisecond), MaxStartLead)
	}
	if wait <= 0 {
		return nil
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Bound is the longest a run of these options may take: warm-up,
// measured time and slack for connecting and tearing down.
func (o *RunnerOptions) Bound(slack time.Duration) time.Duration {
	return time.Duration(o.Duration+o.Warmup) + slack
}

// RunnerResults is what every kind's result has, embedded in it as
// fortio's RunnerResults is: the measured interval (warm-up excluded).
type RunnerResults struct {
	Start   time.Time `json:"start"`   // start of the measured interval
	End     time.Time `json:"end"`     // end of the measured interval
	Seconds float64   `json:"seconds"` // measured interval length
}

// Interval gives generic code the base of a kind's result.
func (r *RunnerResults) Interval() *RunnerResults { return r }

// Runs is a kind's options (a pointer), through its RunnerOptions.
type Runs interface{ Runner() *RunnerOptions }

// Measures is a kind's result (a pointer), through its RunnerResults.
type Measures interface{ Interval() *RunnerResults }

// Duration is a time.Duration that reads and writes JSON as "10s".
type Duration time.Duration

func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration must be a string like \"10s\": %w", err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// PortShare is share Index of Count equal shares of the client
// namespace's ephemeral port range (ip_local_port_range). The suite gives
// each placement its own share, so a placement's connections never reuse
// a four-tuple that another placement's connection left in TIME_WAIT on
// the same server (engine/internal/portshare says why that matters).
type PortShare struct {
	Index int `json:"index"`
	Count int `json:"count"`
}

// Validate checks the share is one of Count.
func (s *PortShare) Validate() error {
	if s == nil {
		return nil
	}
	if s.Count < 1 || s.Index < 0 || s.Index >= s.Count {
		return fmt.Errorf("port share %d of %d: want 0 <= index < count", s.Index, s.Count)
	}
	return nil
}

// RunWith adapts an engine's typed client (Run of options O giving *R) to
// Kind.Run: options are a *O, a failed run returns a nil result.
func RunWith[O, R any](run func(context.Context, O) (*R, error)) func(context.Context, any) (any, error) {
	return func(ctx context.Context, options any) (any, error) {
		o, ok := options.(*O)
		if !ok {
			return nil, fmt.Errorf("options %T, want %T", options, o)
		}
		r, err := run(ctx, *o)
		if err != nil {
			return nil, err
		}
		return r, nil
	}
}

// New returns a function that returns a new *T, for NewOptions and
// NewResult.
func New[T any]() func() any { return func() any { return new(T) } }
