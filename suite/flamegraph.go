package suite

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/cnibench/cnibench/results"
	"github.com/cnibench/cnibench/suite/flamegraph"
)

// FlameGraphDir is where a run's flame graphs go, beside results.json.
const FlameGraphDir = "flamegraphs"

// flameGraphs samples the CPU stacks of the plan's --flame-graph test:
// one extra sample per scenario and placement after the rounds, while
// perf samples the client's and server's CPUs. The extra sample is kept
// with the graph but no statistic uses it, since sampling costs the CPUs
// it watches; a measured sample is never profiled. A graph that cannot be
// made says why in its Result; only cancellation or a failed save stops
// the run.
func (r *Runner) flameGraphs(ctx context.Context) error {
	test := r.Plan.FlameGraph
	if test == "" {
		return nil
	}
	for i := range r.run.Results {
		res := &r.run.Results[i]
		if res.Test != test || res.Skipped != "" {
			continue
		}
		sc, ok := r.scenario(res.Scenario)
		if !ok {
			continue
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		r.progress("[flame graph] %s %s %s: ", res.Scenario, res.Test, res.Placement.Name())
		fg := r.flameGraph(ctx, sc.Target, res)
		res.FlameGraph = fg
		if ctx.Err() != nil {
			r.progress("interrupted\n")
			return ctx.Err()
		}
		if fg.Error != "" {
			r.progress("none: %s\n", fg.Error)
		} else {
			r.progress("%d stack samples, %s\n", fg.Samples, fg.SVG)
		}
		if err := r.save(); err != nil {
			return err
		}
	}
	return nil
}

func (r *Runner) scenario(name string) (Scenario, bool) {
	for _, sc := range r.Scenarios {
		if sc.Name == name {
			return sc, true
		}
	}
	return Scenario{}, false
}

// flameGraph profiles one extra sample of res on tgt.
func (r *Runner) flameGraph(ctx context.Context, tgt Target, res *results.Result) *results.FlameGraph {
	fg := &results.FlameGraph{Tool: flamegraph.Tool}
	p, ok := tgt.(CPUPinner)
	if !ok || tgt.Kind() != "lab" {
		fg.Error = "only the lab target runs its agents on CPUs of this machine to sample"
		return fg
	}
	client, server := p.PinnedCPUs()
	cpus := agentCPUs(p)
	if len(cpus) == 0 {
		fg.Error = "the agents are not pinned to CPUs (one-CPU machine): nothing to sample apart"
		return fg
	}
	fg.CPUs = cpuNames(cpus)
	dir := filepath.Join(r.OutDir, FlameGraphDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		fg.Error = err.Error()
		return fg
	}
	base := fileName(res.Scenario, res.Test, res.Placement.Name())
	data := filepath.Join(dir, base+".perf.data")
	defer os.Remove(data)     // large, and the folded stacks keep what it says
	limit := sampleBound(res) // the sample's own bound
	rec, err := flamegraph.Start(cpus, data, limit)
	if err != nil {
		fg.Error = err.Error()
		return fg
	}
	fg.Start = time.Now().UTC()
	s := r.sample(ctx, tgt, 0, res)
	fg.End = time.Now().UTC()
	fg.Sample = &s
	if err := rec.Stop(); err != nil {
		fg.Error = err.Error()
		return fg
	}
	if s.Error != "" {
		fg.Error = "the profiled sample failed: " + s.Error
		return fg
	}
	stacks, err := rec.Fold(ctx)
	if err != nil {
		fg.Error = err.Error()
		return fg
	}
	fg.Samples, fg.Idle = stacks.Samples(), stacks.Idle
	title := fmt.Sprintf("%s, %s on %s: CPUs %s (client %v, server %v)", res.Scenario, res.Test, res.Placement.Name(), fg.CPUs, client, server)
	if err := writeFile(filepath.Join(dir, base+".folded"), stacks.WriteFolded); err != nil {
		fg.Error = err.Error()
		return fg
	}
	fg.Folded = FlameGraphDir + "/" + base + ".folded"
	if err := writeFile(filepath.Join(dir, base+".svg"), func(w io.Writer) error { return flamegraph.SVG(w, stacks, title) }); err != nil {
		fg.Error = err.Error()
		return fg
	}
	fg.SVG = FlameGraphDir + "/" + base + ".svg"
	return fg
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

// fileName is a file name for a scenario, test and placement.
func fileName(parts ...string) string {
	return strings.Trim(unsafeName.ReplaceAllString(strings.Join(parts, "_"), "-"), "-")
}

func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	return f.Close()
}
