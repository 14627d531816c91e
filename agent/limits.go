package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/cnibench/cnibench/engine/kinds"
)

// limits bound what one control request may cost the agent: a client that
// sends its headers or body slowly, a huge body, or a connection left open
// are cut off. How long a run itself may take is its budget (HeaderBudget,
// results.go), not these.
type limits struct {
	readHeader time.Duration // request line and headers
	// read bounds reading the whole request, body included; net/http lifts
	// it once the body is read, so a run's answer may wait for the run.
	read time.Duration
	idle time.Duration // a kept-alive connection between two requests
	body int64         // bytes of a run request's body (options are < 1 KiB)
}

var defaultLimits = limits{readHeader: 10 * time.Second, read: time.Minute, idle: 2 * time.Minute, body: 64 << 10}

// limits returns the handler's limits, the defaults unless a test set them.
func (h *handler) limits() limits {
	if h.lim == (limits{}) {
		return defaultLimits
	}
	return h.lim
}

// newControlServer is the control API's HTTP server with l's time limits.
// It has no WriteTimeout: a run's answer is written when the run ends.
func newControlServer(h http.Handler, l limits) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: l.readHeader, ReadTimeout: l.read, IdleTimeout: l.idle}
}

// runners are the client sides the run endpoint starts: the kinds' own,
// or in tests counting fakes, through which a test sees that a refused
// request started nothing.
type runners struct {
	kind func(context.Context, kinds.Kind, any) (any, error)
}

// The real runners wait for the options' start time first (the pairs of
// a sample start together: kinds.WaitStart).
var realRunners = runners{kind: func(ctx context.Context, k kinds.Kind, o any) (any, error) {
	if err := kinds.WaitStart(ctx, o); err != nil {
		return nil, err
	}
	return k.Run(ctx, o)
}}

func (h *handler) runners() runners {
	if h.run != nil {
		return *h.run
	}
	return realRunners
}

// readOptions reads a run request's body, at most the body limit, as
// exactly one JSON document (decode's).
func (h *handler) readOptions(w http.ResponseWriter, r *http.Request, decode func(*json.Decoder) (func(context.Context) (any, error), error)) (func(context.Context) (any, error), error) {
	limit := h.limits().body
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, limit))
	dec.DisallowUnknownFields()
	run, err := decode(dec)
	if err == nil {
		err = endOfBody(dec)
	}
	if tooBig := (*http.MaxBytesError)(nil); errors.As(err, &tooBig) {
		return nil, fmt.Errorf("request body is over the agent's limit of %d bytes: %w", limit, tooBig)
	}
	return run, err
}

// endOfBody fails unless the body ends after the options: a second
// document or trailing bytes mean the client and agent disagree.
func endOfBody(dec *json.Decoder) error {
	_, err := dec.Token()
	switch {
	case errors.Is(err, io.EOF):
		return nil
	case err == nil:
		return errors.New("bad request: more data after the options")
	}
	return fmt.Errorf("bad request: after the options: %w", err)
}

// oneLine keeps an error answer on one line, whatever a decoder quoted.
func oneLine(s string) string {
	return strings.NewReplacer("\r", `\r`, "\n", `\n`).Replace(s)
}
