package suite

import (
	"fmt"

	"github.com/cnibench/cnibench/results"
)

// Readdresser is an AgentKeeper whose fresh agents can come back at
// another address (a cluster: a replaced pod gets a new pod IP, while a
// Service's ClusterIP or a node's IP stays). Before each sample the
// runner asks for the server's address now and aims the sample there.
type Readdresser interface {
	// ServerAddr is the address the placement's server has now.
	ServerAddr(placement string) (string, error)
}

// reaim aims res at its server's address now when the target moved it:
// the options are made again for the new address (as newResult made them
// for the first), the samples taken so far are kept, and the run notes
// the move once per scenario, placement and address. Results.Placement
// then names the address of the samples from that one on.
func (r *Runner) reaim(tgt Target, res *results.Result) {
	ra, ok := tgt.(Readdresser)
	if !ok {
		return
	}
	addr, err := ra.ServerAddr(res.Placement.Name())
	if err != nil || addr == "" || addr == res.Placement.ServerAddr {
		return // a placement without a live agent fails in the sample itself
	}
	spec, ok := r.Plan.spec(res.Test)
	if !ok {
		return
	}
	old, pl := res.Placement.ServerAddr, res.Placement
	pl.ServerAddr = addr
	fresh := r.Plan.newResult(spec, pl, res.Scenario)
	res.Placement, res.Options = fresh.Placement, fresh.Options
	key := res.Scenario + " " + pl.Name() + " " + addr
	if r.moved == nil {
		r.moved = map[string]bool{}
	}
	if !r.moved[key] {
		r.moved[key] = true
		r.run.Notes = append(r.run.Notes, fmt.Sprintf("%s %s: the server %s is now at %s (was %s: its agent was replaced); its results name the new address, their earlier samples measured the old one",
			res.Scenario, pl.Name(), pl.Server, addr, old))
	}
}
