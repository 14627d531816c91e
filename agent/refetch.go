package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"
)

// Re-fetch pacing: polls start fast (a cut in a short test) and back off to
// pollMax; each poll gets at most pollTimeout, so a hung connection costs
// one poll, not the whole budget.
const (
	pollFirst   = 20 * time.Millisecond
	pollMax     = time.Second
	pollTimeout = 10 * time.Second
	// notFoundGrace: a 404 this soon after the POST failed may be a run
	// request still on its way to the handler; later it means lost.
	notFoundGrace = 2 * time.Second
	// postReserveMax bounds the part of the budget kept back from a POST
	// that hangs, for fetching the answer after it.
	postReserveMax = 15 * time.Second
)

// runCall posts a run request under a fresh request id and returns its
// decoded answer. When the answer is lost (transport error, truncated
// body) or damaged (checksum mismatch) on the way, it fetches the answer
// again by request id until ctx's deadline: the test is never run twice,
// since a second run would measure a different interval.
func (c *Client) runCall(ctx context.Context, path string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, defaultRunBudget)
		defer cancel()
	}
	dl, _ := ctx.Deadline()
	budget := time.Until(dl)
	if budget <= 0 {
		return fmt.Errorf("agent %s: no time left to run a test", c.name)
	}
	id := newRequestID()
	hdr := http.Header{HeaderRequest: {id}, HeaderBudget: {budget.Round(time.Millisecond).String()}}
	pctx, cancel := context.WithTimeout(ctx, budget-min(budget/4, postReserveMax))
	rp, err := c.send(pctx, http.MethodPost, path, body, hdr)
	cancel()

	var lost error // why the answer is being fetched again
	var lostAt time.Time
	damaged := 0
	wait := pollFirst
	for {
		if err == nil {
			if err = c.check(rp, id); err != nil && !errors.Is(err, errChecksum) {
				return fmt.Errorf("agent %s: %w", c.name, err)
			}
		}
		switch {
		case err == nil && rp.status == http.StatusOK:
			return c.decode(rp.body, out)
		case err == nil && rp.status == http.StatusAccepted:
			// still running
		case err == nil && rp.status == http.StatusNotFound && lost != nil:
			if time.Since(lostAt) > notFoundGrace {
				return fmt.Errorf("agent %s: answer to run %s lost (%v), and the agent does not know the run (never received, or the agent restarted)", c.name, id, lost)
			}
		case err == nil:
			return &refusedError{agent: c.name, status: rp.status, text: rp.text()}
		case errors.Is(err, errChecksum):
			damaged++
			if damaged >= 2 {
				return fmt.Errorf("agent %s: answer to run %s failed its checksum twice: truncated or corrupted on the way", c.name, id)
			}
			if lost == nil {
				lostAt = time.Now()
			}
			lost = err
		case lost == nil && dialFailed(err): // the request never left: fail as fast as before
			return fmt.Errorf("agent %s: %w", c.name, err)
		case ctx.Err() != nil:
			if lost == nil {
				lost = err
			}
			return fmt.Errorf("agent %s: no answer to run %s before the deadline (%v)", c.name, id, lost)
		default: // transport error or truncated body: the run goes on at the agent
			if lost == nil {
				lostAt = time.Now()
			}
			lost = err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("agent %s: no answer to run %s before the deadline (%v)", c.name, id, lost)
		case <-time.After(wait):
		}
		wait = min(2*wait, pollMax)
		gctx, cancel := context.WithTimeout(ctx, pollTimeout)
		rp, err = c.send(gctx, http.MethodGet, PathResult+id, nil, nil)
		cancel()
	}
}

// check vets an answer about run id: a 200 must match its checksum, and
// every answer naming a run must name this one.
func (c *Client) check(rp *reply, id string) error {
	if got := rp.header.Get(HeaderRequest); got != "" && got != id {
		return fmt.Errorf("answer is for run %s, not %s", got, id)
	}
	if rp.status != http.StatusOK {
		return nil
	}
	return rp.verify()
}

// dialFailed says the agent could not be reached at all, so it never got
// the request.
func dialFailed(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}
