package suite

import (
	"context"
	"strings"
	"time"
)

// Sequence runs schedules one after the other on one run: a profile whose
// report has plain rows and Service-scale rows (tke) measures its rounds,
// then sweeps the Service count, and one results file holds both. Each
// member keeps its own order; the run's is theirs joined.
type Sequence []Schedule

// Order implements Schedule.
func (q Sequence) Order() string {
	var parts []string
	for _, s := range q {
		parts = append(parts, s.Order())
	}
	return strings.Join(parts, "; after them, ")
}

// Prepare implements Schedule: every member, in order, before any sample.
func (q Sequence) Prepare(ctx context.Context, r *Runner) (int, error) {
	total := 0
	for _, s := range q {
		n, err := s.Prepare(ctx, r)
		if err != nil {
			return 0, err
		}
		total += n
	}
	return total, nil
}

// Measure implements Schedule.
func (q Sequence) Measure(ctx context.Context, r *Runner) error {
	for _, s := range q {
		if err := s.Measure(ctx, r); err != nil {
			return err
		}
	}
	return nil
}

// Estimate implements Schedule.
func (q Sequence) Estimate(p *Plan, scenarios []string) time.Duration {
	var d time.Duration
	for _, s := range q {
		d += s.Estimate(p, scenarios)
	}
	return d
}

// Reprograms implements Reprogrammer when a member reprograms; the
// targets then keep the plan's placements for the members that measure
// rounds (Reprogramming.KeepPlacements).
func (q Sequence) Reprograms() Reprogramming {
	var rp Reprogramming
	for _, s := range q {
		if m := ReprogrammingOf(s); m != nil {
			rp = *m
		}
	}
	rp.KeepPlacements = true
	return rp
}

// reprograms tells whether a member reprograms the Service datapath: a
// Sequence of plain rounds does not (ReprogrammingOf).
func (q Sequence) reprograms() bool {
	for _, s := range q {
		if ReprogrammingOf(s) != nil {
			return true
		}
	}
	return false
}
