package labtarget

import (
	"errors"
	"slices"

	"github.com/cnibench/cnibench/datapath"
	"github.com/cnibench/cnibench/lab"
	"github.com/cnibench/cnibench/results"
)

// The lab target is the part.Env its scenario's parts open in.

// Lab implements part.Env.
func (t *Target) Lab() *lab.Lab { return t.lab }

// Placements implements part.Env.
func (t *Target) Placements() []string { return t.cfg.Placements }

// ServiceVIP implements part.Env: the test Service address of a
// pod-to-service placement (services.go).
func (t *Target) ServiceVIP(placement string) (string, bool) {
	ts, ok := testServices[placement]
	if !ok {
		return "", false
	}
	return datapath.TestVIP(ts.vip).String(), true
}

// PlacementServers implements part.Env: the endpoints a placement's pairs'
// clients dial, pair 0's first (none for an unknown placement; host-to-host
// has pair 0 only).
func (t *Target) PlacementServers(placement string) []string {
	var out []string
	for k := range t.pairs() {
		if eps, err := pairEndpoints(placement, k); err == nil && !slices.Contains(out, eps[1]) {
			out = append(out, eps[1])
		}
	}
	return out
}

// ClientCPUs implements part.Env.
func (t *Target) ClientCPUs() []int { return t.clientCPUs }

// ServerCPUs implements part.Env.
func (t *Target) ServerCPUs() []int { return t.serverCPUs }

// NodeCPUs implements part.Env: the CPUs node i's work runs on in this
// run, where its daemons and proxies are pinned and node-rps steers what
// it receives: node0 hosts the clients (client CPUs), the other nodes the
// servers (server CPUs). Nil when nothing is pinned.
func (t *Target) NodeCPUs(i int) []int {
	if i == 0 {
		return t.clientCPUs
	}
	return t.serverCPUs
}

// Progress implements part.Env.
func (t *Target) Progress(format string, a ...any) { t.progress(format, a...) }

// Note implements part.Env.
func (t *Target) Note(note string) { t.notes = append(t.notes, note) }

// RunPods implements part.Env: the run's pod endpoints split into clients
// and servers (an endpoint that is a client anywhere is a client, as
// agents are pinned): what policy and L7 proxies are put on.
func (t *Target) RunPods() (clients, servers []string, err error) {
	order, isClient, err := t.endpoints(t.lab)
	if err != nil {
		return nil, nil, err
	}
	for _, ep := range order {
		e, err := t.lab.Endpoint(ep)
		if err != nil {
			return nil, nil, err
		}
		if e.Kind != "pod" {
			continue // host-to-host: nodes carry no pod policy
		}
		if isClient[ep] {
			clients = append(clients, ep)
		} else {
			servers = append(servers, ep)
		}
	}
	if len(clients) == 0 || len(servers) == 0 {
		return nil, nil, errors.New("the run's placements have no pod-to-pod or pod-to-service pair (a client pod and a server pod)")
	}
	return clients, servers, nil
}

// Checks implements suite.Checker: how the scenario's parts proved
// themselves on, in the order they opened.
func (t *Target) Checks() []results.Check { return t.stack.Checks() }
