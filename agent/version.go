package agent

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/cnibench/cnibench/internal/version"
)

// The control API is spoken between a CLI and agents of the same binary
// version, so it changes with the version (the run routes did, when every
// kind moved to PathKind); a CLI that meets an agent of another version
// says so instead of passing on a bare "404 page not found".

// refusedError is an agent's answer that refused a run request (not
// found, bad options, busy), with its status.
type refusedError struct {
	agent  string
	status int
	text   string
}

func (e *refusedError) Error() string { return fmt.Sprintf("agent %s: %s", e.agent, e.text) }

// versionHint adds to a refused run request what most often explains it:
// an agent that does not know the route or the options (404, 400) and
// runs another version than this CLI. Any other error, or an agent of
// this version, is returned as it is.
func (c *Client) versionHint(ctx context.Context, err error) error {
	var refused *refusedError
	if !errors.As(err, &refused) || (refused.status != http.StatusNotFound && refused.status != http.StatusBadRequest) {
		return err
	}
	hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	h, herr := c.Health(hctx)
	if herr != nil {
		return err
	}
	if mine := version.Get().Version; h.Version != mine {
		return fmt.Errorf("%w: the agent runs cnibench %s and this CLI is %s; CLI and agents must be the same version (redeploy the agents, or use the CLI of their version)", err, h.Version, mine)
	}
	return err
}
