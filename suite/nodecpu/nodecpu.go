// Package nodecpu reads what the lab's nodes spent: the time of the CPUs
// each node's work is pinned to, from /proc/stat, and the CPU charged to
// the node's cgroups (its own, its pods', its daemons' and proxies'), from
// cpu.stat. The nodes share this machine's kernel, whose work for them
// (softirq, system time) is on their CPUs but, when it runs in the idle
// task's or ksoftirqd's context, in no cgroup: the CPUs count it, the
// cgroups say how much of it the node's own processes were charged. A
// cluster's node is a machine of its own: its whole /proc/stat is read
// through an agent on it (Node.Stat), and nodes that turn out to share a
// kernel count once.
package nodecpu

import (
	"fmt"
	"time"

	"github.com/cnibench/cnibench/internal/procstat"
	"github.com/cnibench/cnibench/results"
)

// Node is one node as the accounting sees it.
type Node struct {
	Name string
	// CPUs its work is pinned to; nil when nothing is pinned (then no CPU
	// is the node's own and the machine's are read as "all").
	CPUs []int
	// Cgroups are the cgroup v2 dirs whose CPU is the node's.
	Cgroups []string
	// Stat reads the node's own /proc/stat when the node is a machine of
	// its own (a cluster's, through an agent on it): its CPUs are then
	// all its kernel's. nil: a node of this machine (CPUs, Cgroups).
	Stat func() (procstat.Stat, error)
	// Kernel names the kernel Stat reads (its boot id).
	Kernel string
}

// Mark is one reading of the nodes.
type Mark struct {
	at     time.Time
	stat   procstat.Stat
	cgroup map[string]float64       // dir → usage seconds; a dir that could not be read is absent
	own    map[string]procstat.Stat // node → its own kernel's reading (Node.Stat)
}

// Read reads /proc/stat and every node's cgroups. A cgroup that cannot be
// read (gone with its proxy) is left out, not an error: it counts for no
// window it is not in at both ends.
func Read(nodes []Node) (Mark, error) {
	st, err := procstat.Read()
	if err != nil {
		return Mark{}, err
	}
	m := Mark{at: time.Now(), stat: st, cgroup: map[string]float64{}, own: map[string]procstat.Stat{}}
	for _, n := range nodes {
		if n.Stat != nil {
			if m.own[n.Name], err = n.Stat(); err != nil {
				return Mark{}, fmt.Errorf("%s: %w", n.Name, err)
			}
		}
		for _, dir := range n.Cgroups {
			if v, err := CgroupSeconds(dir); err == nil {
				m.cgroup[dir] = v
			}
		}
	}
	return m, nil
}

// Since is what nodes spent from before to after.
func Since(nodes []Node, before, after Mark) *results.NodesCPU {
	out := &results.NodesCPU{Seconds: after.at.Sub(before.at).Seconds(), Pinned: pinned(nodes)}
	for _, n := range nodes {
		e := results.NodeCPU{Node: n.Name}
		if n.Stat != nil {
			e.CPUs, e.Kernel = "all", n.Kernel
			e.CPUTimes = times(after.own[n.Name].All.Sub(before.own[n.Name].All))
		} else if out.Pinned {
			e.CPUs = cpuList(n.CPUs)
			e.CPUTimes = times(after.stat.Sum(n.CPUs).Sub(before.stat.Sum(n.CPUs)))
		}
		for _, dir := range n.Cgroups {
			b, ok1 := before.cgroup[dir]
			a, ok2 := after.cgroup[dir]
			if ok1 && ok2 {
				e.CgroupSec += a - b
				e.Cgroups = append(e.Cgroups, baseName(dir))
			}
		}
		out.Nodes = append(out.Nodes, e)
	}
	if !out.Pinned {
		out.Nodes = append(out.Nodes, results.NodeCPU{Node: "all", CPUs: "all",
			CPUTimes: times(after.stat.All.Sub(before.stat.All))})
	}
	return out
}

// pinned is whether every node has CPUs of its own (pinned ones, or its
// own kernel's): one unpinned node makes every CPU anyone's.
func pinned(nodes []Node) bool {
	for _, n := range nodes {
		if len(n.CPUs) == 0 && n.Stat == nil {
			return false
		}
	}
	return len(nodes) > 0
}

// times is a /proc/stat difference as results keep it.
func times(t procstat.Times) results.CPUTimes {
	return results.CPUTimes{UserSec: t.User + t.Nice, SystemSec: t.System, SoftirqSec: t.SoftIRQ, IRQSec: t.IRQ}
}
