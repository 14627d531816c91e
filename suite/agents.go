package suite

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/cnibench/cnibench/results"
)

// AgentKeeper is implemented by targets whose agents are processes the
// run started and can start again (the lab). The runner checks a sample's
// agents before and after it: an agent that died during the sample fails
// that sample with the cause, and a fresh agent measures the next one, so
// one killed process does not fail the rest of the run.
type AgentKeeper interface {
	// AgentDone is closed when the agent of endpoint ends (nil when the
	// endpoint has no agent).
	AgentDone(endpoint string) <-chan struct{}
	// ReplaceDead starts a fresh agent on each endpoint whose agent ended.
	// died says, on one line, which ended and why ("agent on node1-pod0
	// died: signal: killed"), nil when all lived; err is a replacement
	// that failed.
	ReplaceDead(ctx context.Context, endpoints []string) (died, err error)
}

// sampleEndpoints are the endpoints whose agents a sample uses: the
// client and every server ("a+b" for a Service's backends).
func sampleEndpoints(p results.Placement) []string {
	return append([]string{p.Client}, strings.Split(p.Server, "+")...)
}

// keepAgents replaces agents that died since the last sample (noted in
// the run: nothing was measuring then) and returns ctx cancelled when the
// client's agent dies, so a sample whose client is gone fails at once
// instead of waiting out its deadline. A dead server is found after the
// sample (checkAgents): the client's run then ends on its own.
func (r *Runner) keepAgents(ctx context.Context, k AgentKeeper, p results.Placement) (context.Context, context.CancelFunc, error) {
	died, err := k.ReplaceDead(ctx, sampleEndpoints(p))
	if died != nil && err == nil {
		r.run.Notes = append(r.run.Notes, died.Error()+" between samples; a fresh agent was started")
	} else if died != nil {
		r.run.Notes = append(r.run.Notes, died.Error()+" between samples") // the sample says why no agent replaced it
	}
	if err != nil {
		return ctx, func() {}, err
	}
	wctx, cancel := context.WithCancel(ctx)
	if done := k.AgentDone(p.Client); done != nil {
		go func() {
			select {
			case <-done:
				cancel()
			case <-wctx.Done():
			}
		}()
	}
	return wctx, cancel, nil
}

// deathGrace is how long a failed sample waits for one of its agents to
// be seen dead. A killed server's sockets close before its parent reaps
// it, so the client's "EOF" can arrive first; without the wait that
// sample would blame the connection, not the death that broke it.
const deathGrace = time.Second

// DeathGracer is an AgentKeeper that learns of a death later than the
// agents' peers do (a cluster: the kubelet reports a killed container,
// and the CLI polls the API server, a second or more after the
// connections broke): a failed sample waits DeathGrace for one instead of
// deathGrace.
type DeathGracer interface {
	DeathGrace() time.Duration
}

// checkAgents is the check after a sample: the deaths during it (the
// sample's error, nil when every agent lived), each dead agent replaced
// for the next sample. failed says the sample's call returned an error:
// then a death is waited for (deathGrace) before it is ruled out.
func checkAgents(ctx context.Context, k AgentKeeper, p results.Placement, failed bool) error {
	if failed {
		grace := deathGrace
		if g, ok := k.(DeathGracer); ok {
			grace = g.DeathGrace()
		}
		awaitAnyDone(ctx, k, sampleEndpoints(p), grace)
	}
	died, err := k.ReplaceDead(ctx, sampleEndpoints(p))
	if died == nil {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%v; starting a fresh agent failed: %w", died, err)
	}
	return died
}

// awaitAnyDone returns when the agent of one of endpoints has ended, or
// after grace.
func awaitAnyDone(ctx context.Context, k AgentKeeper, endpoints []string, grace time.Duration) {
	wctx, cancel := context.WithTimeout(ctx, grace)
	defer cancel()
	for _, ep := range endpoints {
		if done := k.AgentDone(ep); done != nil {
			go func() {
				select {
				case <-done:
					cancel()
				case <-wctx.Done():
				}
			}()
		}
	}
	<-wctx.Done()
}
