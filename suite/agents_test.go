package suite

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/cnibench/cnibench/agent"
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
	r := &Runner{Scenarios: []Scenario{{"a", k}}, Plan: rrPlan(t, 3, 100*time.Millisecond), OutDir: t.TempDir(), RunID: "k"}
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
	r := &Runner{Scenarios: []Scenario{{"a", k}}, Plan: rrPlan(t, 1, 5*time.Second), OutDir: t.TempDir(), RunID: "k"}
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
}

// Placement points the client at an address nothing listens on, so the
// sample's call fails at once.
func (k *lateDeathTarget) Placement(name string) (results.Placement, error) {
	p, err := k.loopTarget.Placement(name)
	p.ServerAddr = "127.0.0.2"
	return p, err
}

func (k *lateDeathTarget) Agent(ep string) (*agent.Client, error) {
	k.once.Do(func() { time.AfterFunc(300*time.Millisecond, func() { close(k.serverDone) }) })
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
	r := &Runner{Scenarios: []Scenario{{"a", k}}, Plan: rrPlan(t, 1, 2*time.Second), OutDir: t.TempDir(), RunID: "k"}
	run, err := r.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if s := run.Results[0].Samples[0]; s.Error != "agent on s died: signal: killed" {
		t.Errorf("error %q, want the server agent's death", s.Error)
	}
}
