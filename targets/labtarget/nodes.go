package labtarget

import (
	"context"
	"fmt"
	"sync"

	"github.com/cnibench/cnibench/datapath"
	"github.com/cnibench/cnibench/datapath/sweep"
	"github.com/cnibench/cnibench/lab"
)

// nodeDatapaths is one Service datapath spread over the lab's nodes, as
// kube-proxy runs on every node of a cluster: the sweep's Services are
// programmed on every node, so a new connection walks the rules of the
// client's node (up to its Service) and again those of the server's node
// (all of them: a Pod IP matches no ClusterIP), as it does in a cluster.
//
// Each node syncs itself, so nodes are programmed and verified at the same
// time and a step's stats are those of the slowest node. Counts and memory
// are node0's (the client's): every node holds the same.
type nodeDatapaths struct {
	nodes []string
	dps   []datapath.Datapath
}

var (
	_ datapath.Datapath = (*nodeDatapaths)(nil)
	_ sweep.Preflighter = (*nodeDatapaths)(nil)
)

// labDatapath is the lab's Service datapath as one, from what
// OpenDatapaths returned: the socket load balancer, which is one for the
// whole lab, or every node's together.
func labDatapath(l *lab.Lab, dps []datapath.Datapath) (datapath.Datapath, error) {
	if len(dps) == 1 {
		return dps[0], nil
	}
	g := &nodeDatapaths{dps: dps}
	for _, n := range l.Nodes {
		g.nodes = append(g.nodes, n.Name)
	}
	if len(g.nodes) != len(g.dps) {
		return nil, fmt.Errorf("lab %q: %d nodes but %d Service datapaths", l.Config.Name, len(g.nodes), len(g.dps))
	}
	return g, nil
}

func (t *Target) datapath() (datapath.Datapath, error) { return labDatapath(t.lab, t.dps) }

func (g *nodeDatapaths) Name() string { return g.dps[0].Name() }

// each runs f on every node at once and returns the first error, naming
// its node.
func (g *nodeDatapaths) each(f func(i int, d datapath.Datapath) error) error {
	errs := make([]error, len(g.dps))
	var wg sync.WaitGroup
	for i, d := range g.dps {
		wg.Go(func() {
			if err := f(i, d); err != nil {
				errs[i] = fmt.Errorf("%s: %w", g.nodes[i], err)
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func (g *nodeDatapaths) Program(ctx context.Context, spec datapath.Spec) (datapath.ProgramStats, error) {
	stats := make([]datapath.ProgramStats, len(g.dps))
	err := g.each(func(i int, d datapath.Datapath) error {
		var err error
		stats[i], err = d.Program(ctx, spec)
		return err
	})
	slowest := stats[0]
	for _, s := range stats[1:] {
		if s.Generate+s.Apply > slowest.Generate+slowest.Apply {
			slowest = s
		}
	}
	return slowest, err
}

func (g *nodeDatapaths) Verify(ctx context.Context) (datapath.Counts, error) {
	counts := make([]datapath.Counts, len(g.dps))
	err := g.each(func(i int, d datapath.Datapath) error {
		var err error
		counts[i], err = d.Verify(ctx)
		return err
	})
	return counts[0], err
}

func (g *nodeDatapaths) Expected(spec datapath.Spec) datapath.Counts {
	return g.dps[0].Expected(spec)
}

func (g *nodeDatapaths) Memory(ctx context.Context) (datapath.Memory, error) {
	return g.dps[0].Memory(ctx)
}

// Preflight asks every node's datapath that has fixed capacity.
func (g *nodeDatapaths) Preflight(spec datapath.Spec) error {
	for i, d := range g.dps {
		if pf, ok := d.(sweep.Preflighter); ok {
			if err := pf.Preflight(spec); err != nil {
				return fmt.Errorf("%s: %w", g.nodes[i], err)
			}
		}
	}
	return nil
}

// Close closes every node's datapath (each Close is idempotent; the
// target closes them again when it closes).
func (g *nodeDatapaths) Close() error {
	var first error
	for _, d := range g.dps {
		if err := d.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// SetPartialSyncs implements datapath.PartialSyncer on every node: partial
// when every node's datapath is.
func (g *nodeDatapaths) SetPartialSyncs(on bool) bool {
	all := true
	for _, d := range g.dps {
		p, ok := d.(datapath.PartialSyncer)
		all = ok && p.SetPartialSyncs(on) && all
	}
	return all
}
