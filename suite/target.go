package suite

import (
	"errors"

	"github.com/cnibench/cnibench/agent"
	"github.com/cnibench/cnibench/results"
)

// ErrUnsupported is wrapped by Target.Placement when a target cannot host a
// placement (other-node on a one-node cluster, say): the runner then records
// the result as skipped, with the error as the reason, instead of failing.
var ErrUnsupported = errors.New("unsupported on this target")

// Target is where the suite's traffic runs: the local lab, or a
// Kubernetes cluster. The runner only needs to know which endpoints make a
// placement, how to reach their agents, and what CPU they used.
type Target interface {
	// Kind is "lab" or "k8s".
	Kind() string
	// Details is the target's provenance for the results document.
	Details() map[string]any
	// Placement maps a placement name to its client and server endpoints,
	// or says why this target cannot host it.
	Placement(name string) (results.Placement, error)
	// Agent returns the control client of the agent on an endpoint.
	Agent(endpoint string) (*agent.Client, error)
	// CPUSeconds is the CPU time an endpoint has used so far (its cgroup's
	// usage), or an error when the target cannot account it.
	CPUSeconds(endpoint string) (float64, error)
	// Close releases what opening the target made (agents, a lab brought
	// up for the run, a cluster's objects); a second Close is a no-op.
	Close() error
}

// Noter is implemented by targets with remarks the results must carry as
// run notes (shown as warnings in the reports), e.g. a cluster whose
// kubelet refused a sysctl the agents asked for.
type Noter interface {
	Notes() []string
}

// targetNotes are a scenario's target notes, prefixed with its name.
func targetNotes(sc Scenario) []string {
	n, ok := sc.Target.(Noter)
	if !ok {
		return nil
	}
	var out []string
	for _, s := range n.Notes() {
		out = append(out, sc.Name+": "+s)
	}
	return out
}
