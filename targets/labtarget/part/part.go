// Package part is the registry of the lab's scenario parts: a feature a
// run switches on ("policy", "l7-node", "cc-bbr", "wireguard"), proves on,
// measures beside and removes, or a choice the lab is built with ("vxlan",
// "ebpf"). Each part declares when it opens (Phase), what it cannot go
// with (Conflicts), what it proves (Checks), the placements it cannot
// serve, the CPU of its daemons, and how it closes; the lab target opens
// and closes a scenario's parts as a Stack, in phase order, rolling back
// the ones opened before a part that fails. A new part is its package
// and one Register (an import in parts/all).
package part

import (
	"context"

	"github.com/cnibench/cnibench/lab"
	"github.com/cnibench/cnibench/results"
)

// Phase is when a part opens in a run: parts open in phase order (then in
// the order the scenario names them) and close in reverse.
type Phase int

// The phases, in opening order.
const (
	// Build parts have nothing to open: the lab is built with them
	// (routing, the Service datapath's choice) or a schedule uses them
	// (churn).
	Build Phase = iota
	// Tuning opens before the agents' sysctls are read (cc-* shows there).
	Tuning
	// Encryption is proved once the agents run.
	Encryption
	// Services: the test Services in the lab's Service datapath.
	Services
	// Policy: L3/L4 policy on the run's pods.
	Policy
	// L7: proxies in front of the HTTP servers (they pass the policy).
	L7
	// Flows: recorders last, once every other part's rules are in place.
	Flows
)

// Part is one scenario part, as parsed from its name.
type Part interface {
	// Name is the part as --scenarios writes it ("policy-1000").
	Name() string
	// Token is the part in lab names, which allow 12 characters ("p1k").
	Token() string
	Phase() Phase
	// Configure puts what the lab builds into the scenario's lab config
	// (routing, encryption, the Service datapath); most parts change
	// nothing. Parts configure in phase order.
	Configure(c *lab.Config)
	// Conflicts is nil when the part can go with the finished scenario
	// (its other parts and the run's flags), else why not, on one line.
	Conflicts(s Scenario) error
	// Open switches the part on in a running lab and proves it. It
	// returns what it opened even with an error, so the stack closes it;
	// a part with nothing to open returns nil, nil.
	Open(ctx context.Context, env Env) (Opened, error)
}

// Opened is a part switched on in a lab.
type Opened interface {
	// Checks are how it proved itself on: the lines the report shows.
	Checks() []results.Check
	// Close switches it off and checks nothing of it is left.
	Close() error
}

// Sweeper is a Part that can find what a crashed run left of it in a lab
// that stayed up; the stack sweeps it before opening it.
type Sweeper interface {
	Sweep(ctx context.Context, env Env) error
}

// Detailer is an Opened part with a record for the results' target
// details (the policy's counts and probes, the tunings' read-backs).
type Detailer interface {
	AddDetails(d map[string]any)
}

// Limiter is an Opened part that cannot serve some placements: the error
// wraps suite.ErrUnsupported and says why, and the run skips the
// placement with it.
type Limiter interface {
	Unsupported(placement string) error
}

// Meter is an Opened part with daemons or consumers whose CPU (and
// counters) are the lab's datapath usage of each sample.
type Meter interface {
	StartUsage(ctx context.Context) (mark any, err error)
	// EndUsage adds to u what was used since mark (components, flow
	// events); the stack totals u afterwards.
	EndUsage(ctx context.Context, mark any, u *results.DatapathUsage) error
}

// Env is what the lab target gives a part to open in.
type Env interface {
	Lab() *lab.Lab
	// Placements the run measures.
	Placements() []string
	// RunPods are the run's client and server pods (no host endpoints).
	RunPods() (clients, servers []string, err error)
	// ServiceVIP is the test Service address of a pod-to-service
	// placement, ok false for any other; PlacementServers the endpoints
	// another placement's clients dial, one per pair of the run (--pairs;
	// a part that guards or proves the path must cover each).
	ServiceVIP(placement string) (vip string, ok bool)
	PlacementServers(placement string) []string
	// NodeCPUs are the CPUs node i's work runs on (nil: unpinned);
	// ClientCPUs and ServerCPUs the agents'.
	NodeCPUs(i int) []int
	ClientCPUs() []int
	ServerCPUs() []int
	// Progress writes to the run's progress line; Note adds a run note.
	Progress(format string, a ...any)
	Note(note string)
}
