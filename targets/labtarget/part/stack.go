package part

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/cnibench/cnibench/results"
)

// Stack is the parts open in a lab, in the order they opened: it closes
// them in reverse, and a part that fails to open closes the ones before it.
type Stack struct {
	open []opened
}

type opened struct {
	part Part
	o    Opened
}

// Open opens parts in the order given (Ordered), each after sweeping what
// a crashed run left of it. When part k fails, what it opened and every
// part opened before it (k-1 … 1, also by earlier calls) are closed, in
// reverse, and the error says which part failed.
func (s *Stack) Open(ctx context.Context, env Env, parts []Part) error {
	for _, p := range parts {
		err := ctx.Err()
		if sw, ok := p.(Sweeper); ok && err == nil {
			err = sw.Sweep(ctx, env)
		}
		var o Opened
		if err == nil {
			o, err = p.Open(ctx, env)
		}
		if o != nil {
			s.open = append(s.open, opened{p, o})
		}
		if err != nil {
			return errors.Join(fmt.Errorf("%s: %w", p.Name(), err), s.Close())
		}
	}
	return nil
}

// Close closes every open part, last opened first, and says which failed.
func (s *Stack) Close() error {
	var errs []error
	for _, op := range slices.Backward(s.open) {
		if err := op.o.Close(); err != nil {
			errs = append(errs, fmt.Errorf("closing %s: %w", op.part.Name(), err))
		}
	}
	s.open = nil
	return errors.Join(errs...)
}

// Checks are the open parts' checks, in opening order.
func (s *Stack) Checks() []results.Check {
	var out []results.Check
	for _, op := range s.open {
		out = append(out, op.o.Checks()...)
	}
	return out
}

// AddDetails adds the open parts' records to a target's details.
func (s *Stack) AddDetails(d map[string]any) {
	for _, op := range s.open {
		if x, ok := op.o.(Detailer); ok {
			x.AddDetails(d)
		}
	}
}

// Unsupported is the first open part's reason it cannot serve placement.
func (s *Stack) Unsupported(placement string) error {
	for _, op := range s.open {
		if l, ok := op.o.(Limiter); ok {
			if err := l.Unsupported(placement); err != nil {
				return err
			}
		}
	}
	return nil
}

// usageMark is what a sample's start read of each meter.
type usageMark struct {
	at    time.Time
	marks []any // by s.open index; nil for a part that does not meter
}

// StartUsage reads the meters of the open parts; nil when none meters.
func (s *Stack) StartUsage(ctx context.Context) (any, error) {
	m := usageMark{at: time.Now(), marks: make([]any, len(s.open))}
	metered := false
	for i, op := range s.open {
		if me, ok := op.o.(Meter); ok {
			mark, err := me.StartUsage(ctx)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", op.part.Name(), err)
			}
			m.marks[i], metered = mark, true
		}
	}
	if !metered {
		return nil, nil
	}
	return m, nil
}

// EndUsage is the open parts' usage since mark (StartUsage), totalled;
// nil for no mark.
func (s *Stack) EndUsage(ctx context.Context, mark any, source string) (*results.DatapathUsage, error) {
	m, ok := mark.(usageMark)
	if !ok {
		return nil, nil
	}
	u := &results.DatapathUsage{Source: source}
	for i, op := range s.open {
		if me, ok := op.o.(Meter); ok && i < len(m.marks) {
			if err := me.EndUsage(ctx, m.marks[i], u); err != nil {
				return nil, fmt.Errorf("%s: %w", op.part.Name(), err)
			}
		}
	}
	u.Total(time.Since(m.at).Seconds())
	return u, nil
}
