package kinds

import (
	"context"
	"strings"
	"testing"
	"time"
)

func TestOverlapAndSpan(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	for _, c := range []struct {
		a0, a1, b0, b1 int
		want           float64
	}{
		{0, 1000, 0, 1000, 1},
		{0, 1000, 50, 1050, 0.95},
		{0, 1000, 1000, 2000, 0},
		{0, 1000, -500, 500, 0.5},
		{0, 0, 0, 1000, 0},
	} {
		if got := Overlap(at(c.a0), at(c.a1), at(c.b0), at(c.b1)); got != c.want {
			t.Errorf("%v: overlap %.3f, want %.3f", c, got, c.want)
		}
	}
	s := Span([]*RunnerResults{{Start: at(10), End: at(1010), Seconds: 1}, {Start: at(0), End: at(990), Seconds: 0.99}})
	if !s.Start.Equal(at(0)) || !s.End.Equal(at(1010)) || s.Seconds != 1 {
		t.Errorf("span %+v", s)
	}
}

type startOptions struct{ RunnerOptions }

// The agents wait for the pairs' start time: at once when it is unset or
// past, until it otherwise, and never for a start further than a minute
// ahead (the clocks disagree).
func TestWaitStart(t *testing.T) {
	ctx := context.Background()
	if err := WaitStart(ctx, &startOptions{}); err != nil {
		t.Fatal(err)
	}
	o := &startOptions{RunnerOptions{StartAt: time.Now().Add(80 * time.Millisecond)}}
	if err := WaitStart(ctx, o); err != nil || time.Now().Before(o.StartAt) {
		t.Errorf("returned before the start: %v", err)
	}
	far := &startOptions{RunnerOptions{StartAt: time.Now().Add(2 * time.Minute)}}
	if err := WaitStart(ctx, far); err == nil || !strings.Contains(err.Error(), "do the clocks agree?") {
		t.Errorf("two minutes ahead: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	soon := &startOptions{RunnerOptions{StartAt: time.Now().Add(time.Second)}}
	if err := WaitStart(cctx, soon); err == nil {
		t.Error("waited through a cancelled context")
	}
}
