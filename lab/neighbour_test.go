package lab

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/mntnstest"
	"github.com/cnibench/cnibench/internal/netnsx"
	"github.com/vishvananda/netns"
)

// Tests of a lab next to another tool that uses /run/netns. Each runs in a
// private mount namespace where /run/netns starts as a plain directory,
// as on a host where nobody has run `ip netns add` yet.

// sh runs a command and fails t with its output if it fails.
func sh(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// assertNoMounts fails t if any mount under /run/netns, hidden or not, is
// of lab name.
func assertNoMounts(t *testing.T, name string) {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.Contains(line, netnsx.Path(Prefix(name))) {
			t.Errorf("mount left: %s", line)
		}
	}
}

// assertIPNetnsClean fails t if `ip netns list` complains about a file
// without a namespace behind it.
func assertIPNetnsClean(t *testing.T) {
	t.Helper()
	out := sh(t, "ip", "netns", "list")
	if strings.Contains(out, "invalid") {
		t.Errorf("ip netns list:\n%s", out)
	}
}

// downClean runs Down and checks that nothing of the lab is left: no
// namespace file, no mount (hidden or not), nothing `ip netns list`
// complains about.
func downClean(t *testing.T, dir, name string) {
	t.Helper()
	if _, err := Down(dir, name); err != nil {
		t.Errorf("Down: %v", err)
	}
	assertGone(t, dir, name)
	assertNoMounts(t, name)
	assertIPNetnsClean(t)
}

// neighbourName is a namespace name of "another tool".
func neighbourName() string { return fmt.Sprintf("nbr%06d", rand.IntN(1000000)) }

// upSmall brings up a 2x1 lab for a neighbour test; Down is the test's job,
// a cleanup only catches a failed test.
func upSmall(t *testing.T) (name, dir string) {
	t.Helper()
	name, dir = uniqueName(), t.TempDir()
	t.Cleanup(func() { Down(dir, name) })
	if _, err := Up(context.Background(), Config{Name: name, Nodes: 2, PodsPerNode: 1, StateDir: dir}); err != nil {
		t.Fatal(err)
	}
	return name, dir
}

// The reproduction: a neighbour covers /run/netns with a recursive
// bind of itself while a lab is up; `lab down` then failed with EBUSY.
func TestDownAfterNeighbourRbind(t *testing.T) {
	needRoot(t)
	if !mntnstest.Run(t) {
		return
	}
	name, dir := upSmall(t)
	sh(t, "mount", "--rbind", netnsx.RunDir, netnsx.RunDir)
	downClean(t, dir, name)
}

// Another tool's first `ip netns add` binds a plain /run/netns on itself;
// our namespaces must neither vanish nor block the teardown, and its
// namespace must survive ours.
func TestDownAfterNeighbourIPNetnsAdd(t *testing.T) {
	needRoot(t)
	if !mntnstest.Run(t) {
		return
	}
	name, dir := upSmall(t)
	nbr := neighbourName()
	sh(t, "ip", "netns", "add", nbr)
	t.Cleanup(func() { exec.Command("ip", "netns", "del", nbr).Run() })
	if ns, _ := netnsx.ListNamed(Prefix(name)); len(ns) != 5 {
		t.Errorf("namespaces after the neighbour's ip netns add: %v, want 5", ns)
	}
	downClean(t, dir, name)
	sh(t, "ip", "netns", "exec", nbr, "true")
	sh(t, "ip", "netns", "del", nbr)
}

// oldCreate makes namespaces as cnibench did before /run/netns was made
// shared: mounts on a plain directory. Each thread that unshared is
// discarded (the goroutine exits locked).
func oldCreate(t *testing.T, names ...string) {
	t.Helper()
	if err := os.MkdirAll(netnsx.RunDir, 0o755); err != nil {
		t.Fatal(err)
	}
	errc := make(chan error)
	go func() {
		runtime.LockOSThread()
		for _, n := range names {
			h, err := netns.NewNamed(n)
			if err != nil {
				errc <- err
				return
			}
			h.Close()
		}
		errc <- nil
	}()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

// Leftovers of a crashed run of the old version whose mounts a neighbour
// then covered (rbind, then its own namespace in the cover), with a process
// still inside one: Down reaches the hidden mounts, kills the process and
// leaves the neighbour's namespace alone.
func TestDownCoveredLeftovers(t *testing.T) {
	needRoot(t)
	if !mntnstest.Run(t) {
		return
	}
	name, dir := uniqueName(), t.TempDir()
	p := Prefix(name)
	oldCreate(t, p+"underlay", p+"node0", p+"node0-pod0")
	t.Cleanup(func() { Down(dir, name) })
	_, waited := startIn(t, p+"node0-pod0")
	sh(t, "mount", "--rbind", netnsx.RunDir, netnsx.RunDir)
	nbr := neighbourName()
	sh(t, "ip", "netns", "add", nbr)
	t.Cleanup(func() { exec.Command("ip", "netns", "del", nbr).Run() })
	// The cover holds reachable copies of the mounts. Unmount two, as a
	// neighbour cleaning up might, so only their hidden mounts are left;
	// the underlay keeps both.
	for _, n := range []string{"node0", "node0-pod0"} {
		sh(t, "umount", netnsx.Path(p+n))
	}
	left, err := Leftovers(dir, name)
	if got := strings.Join(left, "\n"); err != nil || !strings.Contains(got, "netns "+p+"node0: mount hidden under a mount on /run/netns") ||
		!strings.Contains(got, "(sleep) in netns "+p+"node0-pod0") {
		t.Errorf("leftovers of covered namespaces: %q, %v", left, err)
	}
	downClean(t, dir, name)
	assertKilled(t, "a process in a covered namespace", waited)
	sh(t, "ip", "netns", "exec", nbr, "true")
	sh(t, "ip", "netns", "del", nbr)
}

// waitInNetns waits until pid runs sleep in namespace ns (ip netns exec has
// exec'd it).
func waitInNetns(t *testing.T, pid int, ns string) {
	t.Helper()
	want, err := netnsx.IDOf(netnsx.Path(ns))
	if err != nil {
		t.Fatal(err)
	}
	for range 500 {
		if id, err := netnsx.IDOf(fmt.Sprintf("/proc/%d/ns/net", pid)); err == nil && id == want && netnsx.Comm(pid) == "sleep" {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("pid %d never ran sleep in %s", pid, ns)
}

// startIn starts sleep in namespace ns of the lab from outside its cgroups
// (as `ip netns exec` by hand would) and returns a channel with its exit.
func startIn(t *testing.T, ns string) (*exec.Cmd, chan error) {
	t.Helper()
	c := exec.Command("ip", "netns", "exec", ns, "sleep", "300")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- c.Wait() }()
	t.Cleanup(func() { c.Process.Kill() })
	waitInNetns(t, c.Process.Pid, ns)
	return c, waited
}

// assertKilled fails t unless the process behind waited was killed.
func assertKilled(t *testing.T, what string, waited chan error) {
	t.Helper()
	select {
	case err := <-waited:
		if err == nil || !strings.Contains(err.Error(), "killed") {
			t.Errorf("%s exited with %v, want killed", what, err)
		}
	case <-time.After(5 * time.Second):
		t.Errorf("%s survived Down", what)
	}
}

// A namespace whose mount is gone (another tool unmounted it) while a
// process keeps it alive: only its loopback tag says it is the lab's.
func TestDownNameGoneProcessInside(t *testing.T) {
	needRoot(t)
	if !mntnstest.Run(t) {
		return
	}
	name, dir := upSmall(t)
	ns := Prefix(name) + "node0-pod0"
	_, waited := startIn(t, ns)
	sh(t, "umount", netnsx.Path(ns))
	l, err := Load(dir, name)
	if err != nil {
		t.Fatal(err)
	}
	st, err := l.Status()
	if want := "netns " + ns + " BROKEN (file without a namespace mount; 'cnibench lab down' removes it)"; err != nil || !strings.Contains(st, want) {
		t.Errorf("status lacks %q (%v):\n%s", want, err, st)
	}
	downClean(t, dir, name)
	assertKilled(t, "a process in a lab namespace whose name is gone", waited)
}

// Leftovers (what `lab status` shows for a lab without state) names every
// state a namespace can be left in, and the processes inside; Down then
// removes all of it.
func TestLeftoversEveryState(t *testing.T) {
	needRoot(t)
	if !mntnstest.Run(t) {
		return
	}
	name, dir := upSmall(t)
	p := Prefix(name)
	// A crash: the state file is gone.
	if err := os.Remove(filepath.Join(dir, name, stateFile)); err != nil {
		t.Fatal(err)
	}
	a, waitA := startIn(t, p+"node0-pod0")
	b, waitB := startIn(t, p+"node1-pod0")
	// node1-pod0: mount gone, process inside; node2: a file never mounted.
	sh(t, "umount", netnsx.Path(p+"node1-pod0"))
	if err := os.WriteFile(netnsx.Path(p+"node2"), nil, 0o444); err != nil {
		t.Fatal(err)
	}
	left, err := Leftovers(dir, name)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(left, "\n")
	t.Logf("leftovers:\n%s", got)
	for _, want := range []string{
		"state dir " + filepath.Join(dir, name),
		"netns " + p + "underlay: mounted",
		"netns " + p + "node0-pod0: mounted",
		"netns " + p + "node1-pod0: file without a namespace mount",
		"netns " + p + "node2: file without a namespace mount",
		fmt.Sprintf("process %d (sleep) in netns %snode0-pod0\n", a.Process.Pid, p),
		fmt.Sprintf("process %d (sleep) in netns %snode1-pod0 (its name under /run/netns is gone)", b.Process.Pid, p),
	} {
		if !strings.Contains(got+"\n", want) {
			t.Errorf("leftovers lack %q", want)
		}
	}
	downClean(t, dir, name)
	assertKilled(t, "process in "+p+"node0-pod0", waitA)
	assertKilled(t, "process in "+p+"node1-pod0", waitB)
	if left, err := Leftovers(dir, name); len(left) > 0 || err != nil {
		t.Errorf("leftovers after Down: %q, %v", left, err)
	}
}
