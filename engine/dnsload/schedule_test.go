package dnsload

import "sync"

// scheduleRecorder is an observer (observe.go) that keeps every send and
// answer of a run, to count what the schedule asked for apart from what
// the clock let through.
type scheduleRecorder struct {
	mu      sync.Mutex
	r       *run
	sends   [][2]int64 // intended, t0
	answers [][3]int64 // intended, t0, arrival
	flying  [][2]int64 // intended, t0 of the queries in flight at the end
	unsents []int64    // intended times (up to the window's end) never sent
}

func (s *scheduleRecorder) sent(r *run, intended, t0 int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.r = r
	s.sends = append(s.sends, [2]int64{intended, t0})
}

func (s *scheduleRecorder) answered(r *run, intended, t0, now int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.answers = append(s.answers, [3]int64{intended, t0, now})
}

func (s *scheduleRecorder) inFlight(r *run, intended, t0 int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.flying = append(s.flying, [2]int64{intended, t0})
}

func (s *scheduleRecorder) unsent(r *run, intended int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.r = r
	s.unsents = append(s.unsents, intended)
}

// scheduleCounts are a run's queries counted by their place on the
// schedule and by the clock.
type scheduleCounts struct {
	due         int64 // intended in the window: what the schedule asked for
	dueAnswered int64 // of those, answered within the timeout
	dueFlying   int64 // of those, still in flight when the run stopped
	dueUnsent   int64 // of those, not sent when the run stopped
	sentIn      int64 // sent in the window (Result.Sent counts these)
	answeredIn  int64 // answered in the window within the timeout (Result.Responses)
	crossIn     int64 // answered in the window, due before it (a stall at its start)
	crossOut    int64 // due in the window, answered after it (a stall at its end)
}

func (s *scheduleRecorder) counts() scheduleCounts {
	s.mu.Lock()
	defer s.mu.Unlock()
	var c scheduleCounts
	if s.r == nil {
		return c
	}
	in := s.r.inWindow
	for _, q := range s.sends {
		if in(q[0]) {
			c.due++
		}
		if in(q[1]) {
			c.sentIn++
		}
	}
	for _, at := range s.unsents {
		if in(at) {
			c.due++
			c.dueUnsent++
		}
	}
	for _, q := range s.flying {
		if in(q[0]) {
			c.dueFlying++
		}
	}
	for _, a := range s.answers {
		if a[2]-a[1] >= s.r.timeout {
			continue
		}
		switch intended, arrival := in(a[0]), in(a[2]); {
		case intended && arrival:
			c.dueAnswered++
			c.answeredIn++
		case intended:
			c.dueAnswered++
			c.crossOut++
		case arrival:
			c.answeredIn++
			c.crossIn++
		}
	}
	return c
}
