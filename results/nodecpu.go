package results

// NodesCPU is what the lab's nodes spent over one window (a sample, or the
// idle reading before a scenario's first sample): per node, the time of
// the CPUs its work was pinned to (/proc/stat) and the CPU charged to its
// cgroups. The lab's nodes share this machine's kernel, so the kernel's
// work for a node (its softirq, its system time) is on the node's CPUs
// whoever was charged for it: counting the CPUs, not only the processes,
// is what lets queries per core count the kernel's cores too.
type NodesCPU struct {
	// Seconds is the window's wall time.
	Seconds float64 `json:"seconds"`
	// Pinned is false when the nodes' work was not pinned (one CPU, or
	// --cpu-pinning none): no CPU is any node's own, the nodes' entries
	// carry their cgroups only and the whole machine's CPUs are one entry
	// named "all".
	Pinned bool      `json:"pinned"`
	Nodes  []NodeCPU `json:"nodes"`
}

// NodeCPU is one node's share of a NodesCPU window. With pinning, nodes
// that share their CPUs (the server nodes) show the same CPU times: the
// totals count each CPU set once (NodesCPU.CPUTotal).
type NodeCPU struct {
	Node string `json:"node"` // "node0"; "all" for the machine when unpinned
	// CPUs read from /proc/stat, "1"; "" for a node of an unpinned run
	// (its CPU times are then 0: see the "all" entry).
	CPUs string `json:"cpus"`
	CPUTimes
	// CgroupSec is the CPU charged to the node's cgroups (the node's own,
	// its pods' and its daemons' and proxies'), from cpu.stat; Cgroups
	// names them.
	CgroupSec float64  `json:"cgroup_sec"`
	Cgroups   []string `json:"cgroups,omitempty"`
	// Kernel is the boot id of the node's own kernel, for a node that is a
	// machine of its own (a cluster's; its CPUs are then "all", read
	// through an agent on it). Nodes that show one kernel share their
	// CPUs (a test cluster or kind on one machine) and count once.
	Kernel string `json:"kernel,omitempty"`
}

// CPUTimes is busy CPU time by state, in seconds (10 ms ticks).
type CPUTimes struct {
	UserSec    float64 `json:"user_sec"` // user + nice (guest is inside)
	SystemSec  float64 `json:"system_sec"`
	SoftirqSec float64 `json:"softirq_sec"`
	IRQSec     float64 `json:"irq_sec"`
}

// BusySec is every busy state: what a core spent not idle.
func (t CPUTimes) BusySec() float64 { return t.UserSec + t.SystemSec + t.SoftirqSec + t.IRQSec }

// KernelSec is the kernel's part of the busy time: system, softirq, irq.
func (t CPUTimes) KernelSec() float64 { return t.SystemSec + t.SoftirqSec + t.IRQSec }

// Add is t + u, state by state.
func (t CPUTimes) Add(u CPUTimes) CPUTimes {
	return CPUTimes{t.UserSec + u.UserSec, t.SystemSec + u.SystemSec, t.SoftirqSec + u.SoftirqSec, t.IRQSec + u.IRQSec}
}

// CPUTotal is the busy time of the nodes' CPUs, each CPU set of each
// kernel counted once (the lab's server nodes share theirs; an unpinned
// run has only "all"; a cluster's nodes count once per kernel): the
// cores the nodes kept busy, by state.
func (n *NodesCPU) CPUTotal() CPUTimes {
	var t CPUTimes
	seen := map[string]bool{}
	for _, e := range n.Nodes {
		if key := e.Kernel + "/" + e.CPUs; e.CPUs != "" && !seen[key] {
			seen[key] = true
			t = t.Add(e.CPUTimes)
		}
	}
	return t
}

// Node is the entry of node name, if there is one (none in a nil n).
func (n *NodesCPU) Node(name string) (NodeCPU, bool) {
	if n == nil {
		return NodeCPU{}, false
	}
	for _, e := range n.Nodes {
		if e.Node == name {
			return e, true
		}
	}
	return NodeCPU{}, false
}
