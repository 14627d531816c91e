package report

import (
	"fmt"
	"math"
	"strings"

	"github.com/cnibench/cnibench/engine/kinds"
	"github.com/cnibench/cnibench/results"
	"github.com/cnibench/cnibench/stats"
)

// Queries per core (issue 32): per scenario, test and placement of a lab
// or cluster run, the work done per second of a core the nodes kept busy, the
// kernel's cores counted (results.WorkPerCore), and what each node's CPUs
// spent idle and under load. The Istio report could only count the
// processes' CPU; on the lab, whose nodes share this machine's kernel, the
// nodes' CPUs count the kernel's work too. One statistic per cell: the
// median over rounds, no interval.

// PerCore is the section's model (report.json extra_sections.queries_per_core).
type PerCore struct {
	Rows []PerCoreRow `json:"rows"`
}

// PerCoreRow is one scenario × test × placement.
type PerCoreRow struct {
	Label       string        `json:"label"` // "[run/]scenario test placement"
	Unit        string        `json:"unit"`  // what a unit of work is: "op", "req", "query", "GB"
	Rounds      int           `json:"rounds"`
	PerCore     Num           `json:"per_core"`      // median over rounds
	PerUserCore Num           `json:"per_user_core"` // the same, the kernel's share left out
	KernelPct   Num           `json:"kernel_pct"`
	Nodes       []PerCoreNode `json:"nodes"`
	// Datapath is its components' (proxies, daemons, the CNI agent) CPU
	// and memory idle and under load; nil without their usage.
	Datapath *PerCoreDatapath `json:"datapath,omitempty"`
}

// PerCoreDatapath is the datapath's components idle (the scenario's idle
// reading) and under load (medians over the rounds): cores and MiB.
type PerCoreDatapath struct {
	IdleCores   Num `json:"idle_cores"`
	IdleMiB     Num `json:"idle_mib"`
	LoadedCores Num `json:"loaded_cores"`
	LoadedMiB   Num `json:"loaded_mib"`
}

// PerCoreNode is one node's CPU, in cores (busy seconds per second).
type PerCoreNode struct {
	Node   string `json:"node"`
	CPUs   string `json:"cpus"`   // "" for a node of an unpinned run (see "all")
	Idle   Num    `json:"idle"`   // before the scenario's first sample; null if not read
	Loaded Num    `json:"loaded"` // median over the rounds
	Cgroup Num    `json:"cgroup"` // the node's cgroups, median over the rounds
	// Kernel is a cluster node's boot id (results.NodeCPU.Kernel); Shares
	// names the earlier node of the row with the same kernel, counted
	// once.
	Kernel string `json:"kernel,omitempty"`
	Shares string `json:"shares,omitempty"`
}

const perCoreKey, perCoreHeading = "queries_per_core", "Queries per core"

const perCoreAbout = "Work per second of a core the nodes kept busy: the nodes' CPUs from /proc/stat (the lab's pinned CPUs; a cluster node's whole kernel, read through an agent on it), so the kernel's work (system, softirq, irq) counts whoever it was charged to, each CPU set of each kernel once; and the same without the kernel's share, as a count of the processes' user time alone would say. Medians over rounds. Per node: cores busy idle (before the scenario's first sample) and under load, and the part of the load charged to the node's cgroups (its pods, daemons and proxies); the datapath's components' CPU and memory idle and under load. See docs/queries-per-core.md."

// perCoreSection is the section; nothing shows without lab samples that
// recorded their nodes.
type perCoreSection struct{}

func (perCoreSection) stage() buildStage { return beforeControl }

func (perCoreSection) build(rep *Report, in []Input) error {
	var m PerCore
	for _, input := range in {
		for _, res := range input.Run.Results {
			if row, ok := perCoreRow(input.Run, res); ok {
				if len(in) > 1 {
					row.Label = input.Label + "/" + row.Label
				}
				m.Rows = append(m.Rows, row)
			}
		}
	}
	if len(m.Rows) > 0 {
		rep.setExtra(perCoreKey, &m)
	}
	return nil
}

// perCoreRow is res's row; ok is false when no round of it has both a
// unit of work and its nodes' CPU.
func perCoreRow(run *results.Run, res results.Result) (PerCoreRow, bool) {
	row := PerCoreRow{Label: fmt.Sprintf("%s %s %s", res.Scenario, res.Test, res.Placement.Name())}
	var per, user, kernel []float64
	loaded, cgroup := map[string][]float64{}, map[string][]float64{}
	var last *results.NodesCPU
	var dpCores, dpMiB []float64
	for _, s := range res.Samples {
		k, ok := kinds.Of(s.Measured())
		if s.Error != "" || !ok || k.PerWork.Client == "" {
			continue
		}
		pc, ok := results.WorkPerCore(k.Read(res.Test, s.Measured()), s.Nodes)
		if !ok {
			continue
		}
		row.Unit = strings.TrimPrefix(k.PerWork.Client, "client CPU per ")
		per, kernel = append(per, pc.PerCore), append(kernel, pc.KernelPct)
		user = append(user, nanIfZero(pc.PerUserCore))
		for _, e := range s.Nodes.Nodes {
			loaded[e.Node] = append(loaded[e.Node], s.Nodes.Cores(e))
			cgroup[e.Node] = append(cgroup[e.Node], e.CgroupSec/s.Nodes.Seconds)
		}
		last = s.Nodes
		if u := s.DatapathUsage; u != nil && len(u.Components) > 0 {
			dpCores, dpMiB = append(dpCores, u.Cores), append(dpMiB, mib(u.MemoryBytes))
		}
	}
	if len(per) == 0 {
		return row, false
	}
	row.Rounds = len(per)
	row.PerCore, row.PerUserCore, row.KernelPct = medianNum(per), medianNum(user), medianNum(kernel)
	idle, idleUsage := scenarioIdle(run, res.Scenario)
	if len(dpCores) > 0 {
		row.Datapath = &PerCoreDatapath{IdleCores: Num(math.NaN()), IdleMiB: Num(math.NaN()), LoadedCores: medianNum(dpCores), LoadedMiB: medianNum(dpMiB)}
		if idleUsage != nil {
			row.Datapath.IdleCores, row.Datapath.IdleMiB = Num(idleUsage.Cores), Num(mib(idleUsage.MemoryBytes))
		}
	}
	first := map[string]string{} // kernel → its first node
	for _, e := range last.Nodes {
		n := perCoreNode(e, idle, loaded[e.Node], cgroup[e.Node])
		if e.Kernel != "" {
			if f, ok := first[e.Kernel]; ok {
				n.Shares = f
			} else {
				first[e.Kernel] = e.Node
			}
		}
		row.Nodes = append(row.Nodes, n)
	}
	return row, true
}

// perCoreNode is node e's medians and idle reading. A node of an unpinned
// run has no CPUs of its own (null idle and loaded: the machine's are
// "all"'s), and "all" no cgroups (null).
func perCoreNode(e results.NodeCPU, idle *results.NodesCPU, loaded, cgroup []float64) PerCoreNode {
	nan := Num(math.NaN())
	n := PerCoreNode{Node: e.Node, CPUs: e.CPUs, Idle: nan, Loaded: medianNum(loaded), Cgroup: medianNum(cgroup), Kernel: e.Kernel}
	if ie, ok := idle.Node(e.Node); ok && e.CPUs != "" {
		n.Idle = Num(idle.Cores(ie))
	}
	if e.CPUs == "" {
		n.Loaded = nan
	}
	if e.CPUs == "all" {
		n.Cgroup = nan
	}
	return n
}

// scenarioIdle is the idle readings of the run's scenario name, or nil.
func scenarioIdle(run *results.Run, name string) (*results.NodesCPU, *results.DatapathUsage) {
	for _, sc := range run.Scenarios {
		if sc.Name == name {
			return sc.IdleNodes, sc.IdleUsage
		}
	}
	return nil, nil
}

// mib is bytes in MiB; NaN for none read (0).
func mib(b uint64) float64 {
	if b == 0 {
		return math.NaN()
	}
	return float64(b) / (1 << 20)
}

func medianNum(xs []float64) Num { return Num(stats.Quantile(xs, 0.5)) }

// nanIfZero: no user time gives no per-user-core figure, not a zero.
func nanIfZero(v float64) float64 {
	if v == 0 {
		return math.NaN()
	}
	return v
}

// busyIdle is the idle load, in cores, above which a node's CPUs are said
// to be shared: a lab at rest keeps its CPUs a few percent busy.
const busyIdle = 0.2

// lines are the section's bullets: a row's figures, then its nodes'.
func (m *PerCore) lines() (heads []string, bodies [][]string) {
	for _, r := range m.Rows {
		heads = append(heads, fmt.Sprintf("%s: %s %s per core-second; %s per user core-second (the kernel's %s%% left out); median of %d rounds",
			r.Label, fmtNum(float64(r.PerCore)), r.Unit, fmtNum(float64(r.PerUserCore)), fmtNum(float64(r.KernelPct)), r.Rounds))
		var body []string
		for _, n := range r.Nodes {
			body = append(body, n.lines()...)
		}
		if d := r.Datapath; d != nil {
			body = append(body, fmt.Sprintf("the datapath's components (proxies, daemons, agents): %s cores and %s MiB idle, %s cores and %s MiB under load",
				fmtNum(float64(d.IdleCores)), fmtNum(float64(d.IdleMiB)), fmtNum(float64(d.LoadedCores)), fmtNum(float64(d.LoadedMiB))))
		}
		bodies = append(bodies, body)
	}
	return heads, bodies
}

// lines are a node's: its CPU idle and under load and its cgroups', and
// a warning when its CPUs were busy at rest.
func (n PerCoreNode) lines() []string {
	cpu := fmt.Sprintf("%s cores busy idle, %s under load", fmtNum(float64(n.Idle)), fmtNum(float64(n.Loaded)))
	var out []string
	switch {
	case n.Kernel != "" && n.Shares != "":
		out = append(out, fmt.Sprintf("%s: its kernel is %s's (one machine), counted once: %s", n.Node, n.Shares, cpu))
	case n.Kernel != "":
		out = append(out, fmt.Sprintf("%s (its own kernel, all its CPUs): %s", n.Node, cpu))
	case n.CPUs == "":
		out = append(out, fmt.Sprintf("%s (unpinned: its CPU is in the machine's): its cgroups %s cores", n.Node, fmtNum(float64(n.Cgroup))))
	case n.CPUs == "all":
		out = append(out, fmt.Sprintf("the machine's CPUs (nothing pinned): %s", cpu))
	default:
		out = append(out, fmt.Sprintf("%s (CPUs %s): %s; its cgroups %s cores", n.Node, n.CPUs, cpu, fmtNum(float64(n.Cgroup))))
	}
	what := "CPUs " + n.CPUs
	if n.Kernel != "" {
		what = n.Node + "'s CPUs"
	}
	if n.Idle > busyIdle && n.Shares == "" {
		out = append(out, fmt.Sprintf("%s were busy idle: other work shares them and counts as the nodes' here, so the figures per core are low by up to %s cores' worth",
			what, fmtNum(float64(n.Idle))))
	}
	return out
}

func (perCoreSection) markdown(b *strings.Builder, rep *Report) {
	if m, ok := rep.Extra[perCoreKey].(*PerCore); ok {
		heads, bodies := m.lines()
		markdownBullets(b, perCoreHeading, perCoreAbout, heads, bodies)
		b.WriteString("\n")
	}
}

func (perCoreSection) html(b *strings.Builder, rep *Report) error {
	if m, ok := rep.Extra[perCoreKey].(*PerCore); ok {
		heads, bodies := m.lines()
		b.WriteString(string(htmlBullets(perCoreHeading, perCoreAbout, heads, bodies)) + "\n")
	}
	return nil
}

var _ builder = perCoreSection{}
