package labtarget

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
)

// AgentDone implements suite.AgentKeeper: closed when the endpoint's
// agent process ends.
func (t *Target) AgentDone(endpoint string) <-chan struct{} {
	if p, ok := t.agents[endpoint]; ok {
		return p.exited
	}
	return nil
}

// ReplaceDead implements suite.AgentKeeper: every agent of endpoints that
// ended is started again the way it was (same endpoint, CPUs, role,
// socket), so the run goes on after an agent is killed.
func (t *Target) ReplaceDead(ctx context.Context, endpoints []string) (died, err error) {
	var deaths []string
	var errs []error
	for _, ep := range endpoints {
		p, ok := t.agents[ep]
		if !ok {
			continue
		}
		select {
		case <-p.exited:
		default:
			continue
		}
		deaths = append(deaths, t.deathCause(ep, p))
		_ = p.stdin.Close() // the fresh agent replaces p in t.agents: Close would not reach it
		if err := t.startAgent(ctx, ep, p.cpus, p.server); err != nil {
			errs = append(errs, fmt.Errorf("agent on %s: %w", ep, err))
		}
	}
	if len(deaths) == 0 {
		return nil, nil
	}
	return errors.New(strings.Join(deaths, "; ")), errors.Join(errs...)
}

// deathCause is one line on how an ended agent ended: the signal that
// killed it, or its exit status and the end of its log (read before a
// fresh agent overwrites the log).
func (t *Target) deathCause(endpoint string, p *agentProc) string {
	msg := fmt.Sprintf("agent on %s died: ", endpoint)
	var ee *exec.ExitError
	switch {
	case p.err == nil:
		msg += "exited with status 0"
	case errors.As(p.err, &ee) && signaled(ee):
		return msg + p.err.Error() // "signal: killed": the log says nothing more
	default:
		msg += p.err.Error()
	}
	return msg + " (log: " + strings.Join(strings.Fields(tail(filepath.Join(t.dir, endpoint+".log"))), " ") + ")"
}

func signaled(ee *exec.ExitError) bool {
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled()
}

// PinnedCPUs implements suite.CPUPinner: the CPUs the client and server
// agents run on (nil when not pinned), read from /proc/stat per sample.
func (t *Target) PinnedCPUs() (client, server []int) { return t.clientCPUs, t.serverCPUs }
