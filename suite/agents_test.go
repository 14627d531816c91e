package suite

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/cnibench/cnibench/agent"
	"github.com/cnibench/cnibench/engine"
	"github.com/cnibench/cnibench/results"
)

// keeperTarget is a loopTarget whose agent deaths are scripted: died maps
// a ReplaceDead call (two per sample: before, after) to a death.
type keeperTarget struct {
	loopTarget
	died   map[int]string
	done   chan struct{} // the client agent's AgentDone
	calls  int
	asked  [][]string
	failed error // what replacing returns
}

func (k *keeperTarget) AgentDone(ep string) <-chan struct{} {
	if ep == "c" {
		return k.done
	}
	return nil
}

func (k *keeperTarget) ReplaceDead(_ context.Context, eps []string) (error, error) {
	k.calls++
	k.asked = append(k.asked, eps)
	if m, ok := k.died[k.calls]; ok {
		return errors.New(m), k.failed
	}
	return nil, nil
}

// rrPlan is TCP_RR on pod-to-pod/same-node without warmup.
func rrPlan(t *testing.T, rounds int, d time.Duration) *Plan {
	t.Helper()
	plan, err := Options{Tests: []string{"TCP_RR"}, Placements: []string{"pod-to-pod/same-node"}, Rounds: rounds, Duration: d}.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	plan.Warmup = 0
	return plan
}

// A death found after a sample fails that sample with the cause; one found
// before a sample (between samples) is a run note; both agents of the
// placement are checked every time.
func TestRunnerRecordsAgentDeaths(t *testing.T) {
	var calls []string
	k := &keeperTarget{loopTarget: loopTarget{startAgent(t), &calls, "a"},
		died: map[int]string{4: "agent on s died: signal: killed", 5: "agent on c died: exit status 1"}}
	r := &Runner{Scenarios: []Scenario{{Name: "a", Target: k}}, Plan: rrPlan(t, 3, 100*time.Millisecond), OutDir: t.TempDir(), RunID: "k"}
	run, err := r.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ss := run.Results[0].Samples
	if len(ss) != 3 || ss[0].Error != "" || ss[1].Error != "agent on s died: signal: killed" || ss[2].Error != "" {
		t.Fatalf("samples %+v, want round 2 failed with the server agent's death", ss)
	}
	if !slices.Contains(run.Notes, "agent on c died: exit status 1 between samples; a fresh agent was started") {
		t.Errorf("notes %q lack the death between samples", run.Notes)
	}
	for _, eps := range k.asked {
		if !slices.Equal(eps, []string{"c", "s"}) {
			t.Fatalf("checked agents %q, want the client and the server", eps)
		}
	}
	if k.calls != 6 {
		t.Errorf("%d checks, want 2 per sample", k.calls)
	}
}

// The client's agent dying ends its sample at once, not at the deadline;
// a replacement that fails is named beside the death.
func TestRunnerClientDeathEndsSampleAtOnce(t *testing.T) {
	var calls []string
	k := &keeperTarget{loopTarget: loopTarget{startAgent(t), &calls, "a"}, done: make(chan struct{}),
		died: map[int]string{2: "agent on c died: signal: killed"}, failed: errors.New("agent on c: start: no such file")}
	time.AfterFunc(200*time.Millisecond, func() { close(k.done) })
	r := &Runner{Scenarios: []Scenario{{Name: "a", Target: k}}, Plan: rrPlan(t, 1, 5*time.Second), OutDir: t.TempDir(), RunID: "k"}
	run, err := r.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	s := run.Results[0].Samples[0]
	if took := s.End.Sub(s.Start); took > 2*time.Second {
		t.Errorf("sample took %s after its client's agent died at 200ms", took)
	}
	if want := "agent on c died: signal: killed; starting a fresh agent failed: agent on c: start: no such file"; s.Error != want {
		t.Errorf("error %q, want %q", s.Error, want)
	}
}

// lateDeathTarget is a target whose server agent is seen dead only after
// the client's call has already failed, as when a killed server's sockets
// close before its parent reaps it.
type lateDeathTarget struct {
	loopTarget
	serverDone chan struct{}
	once       sync.Once
	after      time.Duration // when the death is seen (default 300ms)
}

// Placement points the client at an address nothing listens on, so the
// sample's call fails at once.
func (k *lateDeathTarget) Placement(name string) (results.Placement, error) {
	p, err := k.loopTarget.Placement(name)
	p.ServerAddr = "127.0.0.2"
	return p, err
}

func (k *lateDeathTarget) Agent(ep string) (*agent.Client, error) {
	k.once.Do(func() { time.AfterFunc(cmp.Or(k.after, 300*time.Millisecond), func() { close(k.serverDone) }) })
	return k.loopTarget.Agent(ep)
}

func (k *lateDeathTarget) AgentDone(ep string) <-chan struct{} {
	if ep == "s" {
		return k.serverDone
	}
	return nil
}

func (k *lateDeathTarget) ReplaceDead(_ context.Context, eps []string) (error, error) {
	select {
	case <-k.serverDone:
		return errors.New("agent on s died: signal: killed"), nil
	default:
		return nil, nil
	}
}

// A sample whose call failed waits for the death that broke it: the error
// names the dead server agent, not the connection it closed.
func TestRunnerFailedSampleAwaitsLateDeath(t *testing.T) {
	var calls []string
	k := &lateDeathTarget{loopTarget: loopTarget{startAgent(t), &calls, "a"}, serverDone: make(chan struct{})}
	r := &Runner{Scenarios: []Scenario{{Name: "a", Target: k}}, Plan: rrPlan(t, 1, 2*time.Second), OutDir: t.TempDir(), RunID: "k"}
	run, err := r.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if s := run.Results[0].Samples[0]; s.Error != "agent on s died: signal: killed" {
		t.Errorf("error %q, want the server agent's death", s.Error)
	}
}

// gracefulTarget is a lateDeathTarget that says how late it sees deaths.
type gracefulTarget struct {
	*lateDeathTarget
	grace time.Duration
}

func (g gracefulTarget) DeathGrace() time.Duration { return g.grace }

// A target that sees deaths late (a cluster) waits as long as it says: a
// death seen 1.5 s after the call failed is the sample's cause with a 3 s
// grace, and missed with the default second.
func TestRunnerWaitsTheTargetsDeathGrace(t *testing.T) {
	for _, c := range []struct {
		name      string
		tgt       func(*lateDeathTarget) Target
		wantDeath bool
	}{
		{"3s grace", func(k *lateDeathTarget) Target { return gracefulTarget{k, 3 * time.Second} }, true},
		{"default", func(k *lateDeathTarget) Target { return k }, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			var calls []string
			k := &lateDeathTarget{loopTarget: loopTarget{startAgent(t), &calls, "a"}, serverDone: make(chan struct{}), after: 1500 * time.Millisecond}
			r := &Runner{Scenarios: []Scenario{{Name: "a", Target: c.tgt(k)}}, Plan: rrPlan(t, 1, 2*time.Second), OutDir: t.TempDir(), RunID: "k"}
			run, err := r.Run(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if s := run.Results[0].Samples[0]; (s.Error == "agent on s died: signal: killed") != c.wantDeath || s.Error == "" {
				t.Errorf("error %q, want the death named: %v", s.Error, c.wantDeath)
			}
		})
	}
}

// movingTarget is a keeper whose server agent is replaced after the first
// sample and comes back at another address (first nothing listens at its
// address, then the loop agent does).
type movingTarget struct {
	loopTarget
	samples int
	asked   []string
}

func (m *movingTarget) Placement(name string) (results.Placement, error) {
	p, err := m.loopTarget.Placement(name)
	p.ServerAddr = "127.0.0.2"
	return p, err
}

func (m *movingTarget) AgentDone(string) <-chan struct{} { return nil }

func (m *movingTarget) ReplaceDead(_ context.Context, eps []string) (error, error) {
	m.samples++
	if m.samples == 2 { // after the first sample
		return errors.New("agent on s died: pod deleted"), nil
	}
	return nil, nil
}

func (m *movingTarget) ServerAddr(placement string) (string, error) {
	m.asked = append(m.asked, placement)
	if m.samples < 2 {
		return "127.0.0.2", nil
	}
	return "127.0.0.1", nil
}

// A replaced server that listens elsewhere is measured there from the next
// sample on: the options are aimed at the new address, the result names
// it, the run notes the move once.
func TestRunnerReaimsAMovedServer(t *testing.T) {
	var calls []string
	m := &movingTarget{loopTarget: loopTarget{startAgent(t), &calls, "a"}}
	r := &Runner{Scenarios: []Scenario{{Name: "a", Target: m}}, Plan: rrPlan(t, 3, 200*time.Millisecond), OutDir: t.TempDir(), RunID: "k"}
	run, err := r.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	res := run.Results[0]
	ss := res.Samples
	if len(ss) != 3 || ss[0].Error != "agent on s died: pod deleted" || ss[1].Error != "" || ss[2].Error != "" || ss[2].Result == nil || ss[2].Result.(*engine.Result).Transactions == 0 {
		t.Fatalf("samples %+v, want round 1 failed, rounds 2 and 3 measured at the new address", ss)
	}
	if o := res.Options.(*engine.Options); res.Placement.ServerAddr != "127.0.0.1" || o.Host != "127.0.0.1" {
		t.Errorf("result aimed at %s (options %s), want 127.0.0.1", res.Placement.ServerAddr, o.Host)
	}
	moves := 0
	for _, n := range run.Notes {
		if n == "a pod-to-pod/same-node: the server s is now at 127.0.0.1 (was 127.0.0.2: its agent was replaced); its results name the new address, their earlier samples measured the old one" {
			moves++
		}
	}
	if moves != 1 || len(m.asked) != 3 {
		t.Errorf("notes %q (%d moves), %d address checks: want the move noted once, a check per sample", run.Notes, moves, len(m.asked))
	}
}

// A death between samples whose replacement failed is noted without
// claiming a fresh agent; the sample says why none replaced it.
func TestRunnerNotesAFailedReplacement(t *testing.T) {
	var calls []string
	k := &keeperTarget{loopTarget: loopTarget{startAgent(t), &calls, "a"},
		died: map[int]string{1: "agent pod p (s on n) was deleted"}, failed: errors.New("agent s: pod p-r1 unschedulable")}
	r := &Runner{Scenarios: []Scenario{{Name: "a", Target: k}}, Plan: rrPlan(t, 1, 100*time.Millisecond), OutDir: t.TempDir(), RunID: "k"}
	run, err := r.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if s := run.Results[0].Samples[0]; s.Error != "agent s: pod p-r1 unschedulable" {
		t.Errorf("sample error %q", s.Error)
	}
	if !slices.Equal(run.Notes, []string{"agent pod p (s on n) was deleted between samples"}) {
		t.Errorf("notes %q", run.Notes)
	}
}
