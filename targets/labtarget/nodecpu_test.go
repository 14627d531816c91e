package labtarget

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/netnsx"
	"github.com/cnibench/cnibench/lab"
	"github.com/cnibench/cnibench/lab/labtest"
	"github.com/cnibench/cnibench/results"
	"github.com/cnibench/cnibench/suite/nodecpu"
	"golang.org/x/sys/unix"
)

// A cgroup's name gives it to the one node it names, whatever else it
// says; a name with no node or two gives it to none (the namespace of its
// processes decides).
func TestNodeOfName(t *testing.T) {
	nodes := map[string]int{"node0": 0, "node1": 1}
	for name, want := range map[string]string{
		"node1": "node1", "node0-pod1": "node0", "wg-node1": "node1", "l7-server-node1-pod0": "node1",
		"l7-node-node0": "node0", "amb-ztunnel-node1": "node1", "amb-waypoint": "", "node0-node1": "", "node10-pod0": "",
	} {
		if got := nodeOfName(name, nodes); got != want {
			t.Errorf("%s: %q, want %q", name, got, want)
		}
	}
}

// The accounting of a sample counts a node's work to that node: a busy
// loop started in node1's pod (its namespace and cgroup, on node1's CPU)
// for 2 s of a sample-sized window shows as node1's cgroup CPU and, with
// pinning, on node1's CPUs, and node0's cgroups show none of it. A
// process in a cgroup whose name names no node (as the ambient
// waypoint's) is given to the node whose namespace it runs in.
//
// Tolerances, for a 2-core machine busy with other work (a CI run whose
// own lab traffic runs on the same CPUs): the loop is always runnable, so
// its CPU is never idle in the window whoever runs on it (the loop, other
// tasks, softirq), and the bound asked of node1's CPU, busy at least half
// the window, holds at any load (should the loop end before the test's
// second reading, the test was runnable and not running meanwhile: the
// CPUs were busy). What the loop itself gets does not hold at any load
// (beside another busy loop on its CPU it got 0.2 to 1 s of its 2), so it
// is only asked to have run (50 ms). The cgroup's usage_usec and the loop's
// own rusage are the scheduler's nanosecond accounting of the same
// process: they agree to a few ms at any load. /proc/stat counts 10 ms
// ticks by sampling, ±a few over 200. node0's cgroups run nothing, so the
// bound on them (50 ms) does not depend on the load either; CPU 0, where
// the other work runs, is not judged.
func TestNodeCPUCountsABusyLoopToItsNode(t *testing.T) {
	l := labtest.NewLab(t, "cnbqpc")
	if l.CgroupRoot == "" {
		t.Skip("no cgroup v2: nothing to charge a node's processes to")
	}
	cpus := func(i int) []int { return nil }
	if runtime.NumCPU() >= 2 {
		cpus = func(i int) []int { return []int{min(i, 1)} } // as the target pins: node0 on 0, servers on 1
	}
	startWaypointLike(t, l)
	nodes, err := labNodes(l, cpus)
	if err != nil {
		t.Fatal(err)
	}
	wantCgroups(t, nodes[1], "amb-waypoint", "node1", "node1-pod0")
	before, err := nodecpu.Read(nodes)
	if err != nil {
		t.Fatal(err)
	}
	spun := spin(t, l, labtest.Endpoint(t, l, "node1-pod0"), cpus(1), 2*time.Second)
	after, err := nodecpu.Read(nodes)
	if err != nil {
		t.Fatal(err)
	}
	checkSpin(t, nodecpu.Since(nodes, before, after), spun)
}

// checkSpin checks where the loop's spun seconds were counted.
func checkSpin(t *testing.T, n *results.NodesCPU, spun float64) {
	t.Helper()
	n0, _ := n.Node("node0")
	n1, _ := n.Node("node1")
	t.Logf("window %.2f s, loop %.3f s; node0 cgroups %.3f s, CPUs %s busy %.2f s; node1 cgroups %.3f s, CPUs %s busy %.2f s (kernel %.2f)",
		n.Seconds, spun, n0.CgroupSec, n0.CPUs, n0.BusySec(), n1.CgroupSec, n1.CPUs, n1.BusySec(), n1.KernelSec())
	if spun < 0.05 {
		t.Errorf("the loop ran %.3f s of 2: it never got its CPU", spun)
	}
	if n1.CgroupSec < spun-0.02 || n1.CgroupSec > spun+0.05 {
		t.Errorf("node1's cgroups were charged %.3f s, the loop ran %.3f s", n1.CgroupSec, spun)
	}
	if n0.CgroupSec > 0.05 {
		t.Errorf("node0's cgroups were charged %.3f s, nothing ran there", n0.CgroupSec)
	}
	busy := n1
	if !n.Pinned {
		busy, _ = n.Node("all") // the loop kept at least one of the machine's CPUs busy
	} else if n1.CPUs != "1" || n0.CPUs != "0" {
		t.Errorf("CPUs node0 %q node1 %q, want 0 and 1", n0.CPUs, n1.CPUs)
	}
	if b := busy.BusySec(); b < n.Seconds/2 || b < spun-0.1 {
		t.Errorf("%s's CPUs (%s) were busy %.2f s of a %.2f s window in which the loop was always runnable (and ran %.3f s)",
			busy.Node, busy.CPUs, b, n.Seconds, spun)
	}
}

// spin runs a shell busy loop in ep (its namespace and cgroup, on cpus)
// for d and returns the CPU seconds it used (its rusage). The loop runs
// at nice −10 whatever the test's priority (it may run at SCHED_IDLE and
// nice 19, a shared machine's rule, which the loop would inherit), to get
// its CPU beside the machine's other work, and with a CPU limit of 3 s
// that the kernel enforces: a test starved of CPU by the loop and that
// work, or killed by its timeout, cannot leave it running (without the
// limit, a test binary killed by go test's timeout once left it spinning
// for 20 minutes).
func spin(t *testing.T, l *lab.Lab, ep lab.Endpoint, cpus []int, d time.Duration) float64 {
	t.Helper()
	cmd := exec.Command("sh", "-c", "while :; do :; done")
	if err := l.Start(ep, cmd, cpus); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	if err := unix.Prlimit(pid, unix.RLIMIT_CPU, &unix.Rlimit{Cur: 3, Max: 4}, nil); err != nil {
		t.Logf("no CPU limit on the loop: %v", err)
	}
	attr := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_NORMAL, Nice: -10}
	if err := unix.SchedSetAttr(pid, &attr, 0); err != nil {
		t.Logf("the loop keeps its inherited priority: %v", err)
	}
	time.Sleep(d)
	cmd.Process.Kill()
	cmd.Wait()
	return (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
}

// startWaypointLike starts a sleeping process in node1's namespace in a
// cgroup named as the ambient waypoint's, whose name names no node. Down
// kills it and removes the cgroup with the lab's.
func startWaypointLike(t *testing.T, l *lab.Lab) {
	t.Helper()
	dir := filepath.Join(l.CgroupRoot, "amb-waypoint")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sleep", "600")
	if err := netnsx.StartIn(netnsx.Path(l.Nodes[1].Netns), dir, nil, cmd); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
}

func wantCgroups(t *testing.T, n nodecpu.Node, want ...string) {
	t.Helper()
	var got []string
	for _, c := range n.Cgroups {
		got = append(got, filepath.Base(c))
	}
	if len(got) != len(want) {
		t.Fatalf("%s: cgroups %v, want %v", n.Name, got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("%s: cgroups %v, want %v", n.Name, got, want)
		}
	}
}
