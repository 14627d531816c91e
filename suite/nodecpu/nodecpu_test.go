package nodecpu

import (
	"math"
	"os"
	"testing"
	"time"

	"github.com/cnibench/cnibench/engine/kinds"
	"github.com/cnibench/cnibench/internal/procstat"
	"github.com/cnibench/cnibench/results"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-6 }

// marks are two fixed readings 12 s apart: /proc/stat of this 2-CPU
// machine (procstat's testdata) and the same 12 s later, in which CPU 0
// (the client node's) ran 3 s user, 2 s system, 1 s softirq and CPU 1 (the
// servers') 1 s user, 3 s system, 2 s softirq; node0's cgroups 4 s,
// node1's 2.5 s.
func marks(t *testing.T) (before, after Mark) {
	read := func(path string) procstat.Stat {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		s, err := procstat.Parse(string(b))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	t0 := time.Date(2026, 12, 2, 18, 0, 0, 0, time.UTC)
	before = Mark{at: t0, stat: read("../../internal/procstat/testdata/stat-2cpu.txt"),
		cgroup: map[string]float64{"/cg/node0": 10, "/cg/node0-pod0": 100, "/cg/node1-pod0": 50, "/cg/wg-node1": 1}}
	after = Mark{at: t0.Add(12 * time.Second), stat: read("testdata/stat-2cpu-later.txt"),
		cgroup: map[string]float64{"/cg/node0": 10.5, "/cg/node0-pod0": 103.5, "/cg/node1-pod0": 52, "/cg/wg-node1": 1.5}}
	return before, after
}

var pinnedNodes = []Node{
	{Name: "node0", CPUs: []int{0}, Cgroups: []string{"/cg/node0", "/cg/node0-pod0"}},
	{Name: "node1", CPUs: []int{1}, Cgroups: []string{"/cg/node1-pod0", "/cg/wg-node1", "/cg/gone"}},
	{Name: "node2", CPUs: []int{1}}, // a second server node shares CPU 1
}

// Pinned: each node gets its CPUs' times and its cgroups' CPU; the total
// counts CPU 1 once though two nodes show it; a cgroup not read at both
// ends counts nothing.
func TestSincePinned(t *testing.T) {
	before, after := marks(t)
	n := Since(pinnedNodes, before, after)
	if !n.Pinned || n.Seconds != 12 || len(n.Nodes) != 3 {
		t.Fatalf("%+v", n)
	}
	n0, n1 := n.Nodes[0], n.Nodes[1]
	if n0.CPUs != "0" || !near(n0.UserSec, 3) || !near(n0.SystemSec, 2) || !near(n0.SoftirqSec, 1) || !near(n0.CgroupSec, 4) {
		t.Errorf("node0 %+v", n0)
	}
	if n1.CPUs != "1" || !near(n1.BusySec(), 6) || !near(n1.KernelSec(), 5) || !near(n1.CgroupSec, 2.5) || len(n1.Cgroups) != 2 {
		t.Errorf("node1 %+v", n1)
	}
	if tot := n.CPUTotal(); !near(tot.BusySec(), 12) || !near(tot.KernelSec(), 8) || !near(tot.UserSec, 4) {
		t.Errorf("total %+v, want 12 s busy of which 8 kernel (CPU 1 once)", tot)
	}
	if c := n.Cores(n0); !near(c, 0.5) {
		t.Errorf("node0 kept %v cores busy, want 6 s / 12 s", c)
	}
}

// Unpinned: the nodes keep their cgroups, the machine's CPUs are one
// entry "all".
func TestSinceUnpinned(t *testing.T) {
	before, after := marks(t)
	nodes := []Node{{Name: "node0", Cgroups: []string{"/cg/node0"}}, {Name: "node1", Cgroups: []string{"/cg/node1-pod0"}}}
	n := Since(nodes, before, after)
	if n.Pinned || len(n.Nodes) != 3 || n.Nodes[0].CPUs != "" || n.Nodes[0].BusySec() != 0 || !near(n.Nodes[1].CgroupSec, 2) {
		t.Fatalf("%+v", n)
	}
	all, ok := n.Node("all")
	if !ok || all.CPUs != "all" || !near(all.BusySec(), 12) || !near(n.CPUTotal().BusySec(), 12) {
		t.Errorf("all %+v", all)
	}
}

// Queries per core on the fixed readings: 120 000 transactions measured
// over 10 s of the 12 s window are 12 000/s; the nodes kept 12 s / 12 s =
// 1 core busy, so 12 000 per core-second with the kernel counted, and
// 36 000 per user core-second (4 s / 12 s of user time) without it; the
// kernel's share is 8 s of 12.
func TestWorkPerCoreOnReadings(t *testing.T) {
	before, after := marks(t)
	n := Since(pinnedNodes, before, after)
	pc, ok := results.WorkPerCore(kinds.Reading{Seconds: 10, Work: 120000, Scale: 1e6}, n)
	if !ok || !near(pc.PerCore, 12000) || !near(pc.PerUserCore, 36000) || !near(pc.KernelPct, 100*8.0/12) {
		t.Errorf("%+v %v, want 12000 per core, 36000 per user core, 66.7%% kernel", pc, ok)
	}
}

// A cluster's nodes are machines of their own, each read through its Stat:
// a node's entry is its kernel's whole CPU time ("all", the kernel named),
// the total counts each kernel once (node2 shares node0's, as the local
// test cluster's nodes share this machine's), and a node that cannot be
// read fails the reading, named.
func TestClusterNodesOwnKernels(t *testing.T) {
	before, after := marks(t)
	readings := map[string][]procstat.Stat{
		"a": {before.stat, after.stat},                                                                            // 6 + 6 s busy over 12 s
		"b": {{All: procstat.Times{User: 10, System: 5}}, {All: procstat.Times{User: 11, System: 5, SoftIRQ: 1}}}, // 2 s
	}
	calls := map[string]int{}
	node := func(name, kernel string) Node {
		return Node{Name: name, Kernel: kernel, Stat: func() (procstat.Stat, error) {
			i := calls[name]
			calls[name]++
			return readings[kernel][i], nil
		}}
	}
	nodes := []Node{node("node0", "a"), node("node1", "b"), node("node2", "a")}
	m0, err := Read(nodes)
	if err != nil {
		t.Fatal(err)
	}
	m1, err := Read(nodes)
	if err != nil {
		t.Fatal(err)
	}
	n := Since(nodes, m0, m1)
	if !n.Pinned || len(n.Nodes) != 3 {
		t.Fatalf("%+v", n)
	}
	for i, want := range []float64{12, 2, 12} {
		if e := n.Nodes[i]; e.CPUs != "all" || e.Kernel != nodes[i].Kernel || !near(e.BusySec(), want) {
			t.Errorf("%s: %+v, want %g s busy on all CPUs of kernel %s", e.Node, e, want, nodes[i].Kernel)
		}
	}
	if tot := n.CPUTotal(); !near(tot.BusySec(), 14) || !near(tot.SoftirqSec, 4) {
		t.Errorf("total %+v, want 14 s busy (kernel a once, b once), 4 s softirq", tot)
	}
	bad := []Node{{Name: "node3", Kernel: "c", Stat: func() (procstat.Stat, error) { return procstat.Stat{}, os.ErrNotExist }}}
	if _, err := Read(bad); err == nil || err.Error() != "node3: file does not exist" {
		t.Errorf("unreadable node: %v", err)
	}
}
