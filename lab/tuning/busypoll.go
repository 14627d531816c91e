package tuning

import (
	"context"
	"fmt"
)

// busyPoll is socket busy polling (net.core.busy_poll / busy_read), which
// the lab cannot have: both sysctls are host-wide (absent from every
// network namespace but the host's, which the lab never changes), and a
// veth has no NAPI context of its own to poll. It is listed so a run that
// asks for it is told so and measures nothing under its name.
type busyPoll struct{}

func (busyPoll) Name() string { return "busy-poll" }
func (busyPoll) About() string {
	return "socket busy polling: not applicable in the lab (host-wide sysctls, veths without NAPI)"
}

func (busyPoll) Applicable() error {
	return fmt.Errorf("%w: net.core.busy_poll and busy_read are host-wide (not per network namespace) and cnibench never changes the host; a veth has no NAPI context to busy-poll", ErrNotApplicable)
}

func (busyPoll) Apply(context.Context, Site) (func() error, error) {
	return nil, busyPoll{}.Applicable()
}
func (busyPoll) Verify(context.Context, Site) (string, error) { return "", busyPoll{}.Applicable() }
