package agent

import (
	"context"
	"fmt"
)

// KindRunner runs tests of registered kinds from one agent: an *Client,
// or a test's fake.
type KindRunner interface {
	RunKind(ctx context.Context, kind string, options any) (any, error)
}

// RunAs runs a test of kind from r with options (a pointer to the kind's
// options type) and returns its result as the kind's result type R, for
// callers that probe with one engine (a reachability check, an L7 probe).
func RunAs[R any](ctx context.Context, r KindRunner, kind string, options any) (*R, error) {
	v, err := r.RunKind(ctx, kind, options)
	if err != nil {
		return nil, err
	}
	res, ok := v.(*R)
	if !ok || res == nil {
		return nil, fmt.Errorf("kind %s answered %T, want %T", kind, v, res)
	}
	return res, nil
}
