package lab

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/cnibench/cnibench/internal/netnsx"
	"golang.org/x/sys/unix"
)

// Down removes lab name: it kills the lab's processes (by cgroup and by
// network namespace), deletes its namespaces, cgroups, state dir and
// temporary directories. It is idempotent and needs no state file: it
// finds objects by their prefix. removed lists what it removed or killed.
func Down(stateDir, name string) (removed []string, err error) {
	if err := RequirePrivileges(); err != nil {
		return nil, err
	}
	if err := ValidName(name); err != nil {
		return nil, err
	}
	if stateDir == "" {
		stateDir = DefaultStateDir
	}
	var t teardown
	roots := cgroupRoots(stateDir, name)

	// 1. Processes in the lab's cgroups.
	for r := range roots {
		k, kerr := killCgroup(r, killTimeout)
		t.removed = append(t.removed, k...)
		t.fail(kerr)
	}
	// 2. Processes in the lab's namespaces (started without a cgroup, or
	// entered from outside, e.g. by `ip netns exec`).
	names := t.killNamespaceProcs(Prefix(name))
	// 3. Namespaces, longest name first: pods, then the underlay and nodes.
	t.deleteNamespaces(names)
	// 4. Cgroups, deepest first.
	for r := range roots {
		rm, rerr := removeCgroups(r, rmdirTimeout)
		for _, d := range rm {
			t.removed = append(t.removed, "cgroup "+d)
		}
		t.fail(rerr)
	}
	// 5. State dir.
	t.removeStateDir(filepath.Join(stateDir, name))
	// 6. Temporary directories of the lab's processes (Lab.TempDir).
	for _, d := range tempDirs(Prefix(name)) {
		if err := os.RemoveAll(d); err != nil {
			t.fail(err)
			continue
		}
		t.removed = append(t.removed, "temp dir "+d)
	}
	return t.removed, t.err(name)
}

// teardown collects, step by step, what Down removed and what failed; a
// failed step does not stop the next.
type teardown struct {
	removed []string
	errs    []error
}

// fail records err unless it is nil.
func (t *teardown) fail(err error) {
	if err != nil {
		t.errs = append(t.errs, err)
	}
}

// err joins the recorded errors into one line, nil if there were none.
func (t *teardown) err(name string) error {
	if len(t.errs) == 0 {
		return nil
	}
	msgs := make([]string, len(t.errs))
	for i, e := range t.errs {
		msgs[i] = e.Error()
	}
	return fmt.Errorf("lab %q down: %s", name, strings.Join(msgs, "; "))
}

// cgroupRoots returns the cgroup dirs of lab name: the one under this
// machine's cgroup v2 mount, and the one its state file records if that
// one is named for the lab.
func cgroupRoots(stateDir, name string) map[string]bool {
	roots := map[string]bool{}
	if r := cgroupRootFor(name); r != "" {
		roots[r] = true
	}
	if l, lerr := Load(stateDir, name); lerr == nil && l.CgroupRoot != "" &&
		filepath.Base(l.CgroupRoot) == "cnb-"+name {
		roots[l.CgroupRoot] = true
	}
	return roots
}

// killNamespaceProcs SIGKILLs every process in a namespace of the lab
// (named with prefix, hidden under a cover of /run/netns, or whose name is
// gone; see findNamespaces) and waits up to killTimeout for them to exit. It
// returns the names under /run/netns.
func (t *teardown) killNamespaceProcs(prefix string) []string {
	f, ferr := findNamespaces(prefix)
	t.fail(ferr)
	var victims []int
	for _, ns := range slices.Sorted(maps.Keys(f.pids)) {
		for _, pid := range f.pids[ns] {
			t.removed = append(t.removed, fmt.Sprintf("process %d (%s) in netns %s%s", pid, netnsx.Comm(pid), ns, f.note(ns)))
			unix.Kill(pid, unix.SIGKILL)
			victims = append(victims, pid)
		}
	}
	deadline := time.Now().Add(killTimeout)
	for _, pid := range victims {
		for netnsx.Alive(pid) && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if netnsx.Alive(pid) {
			t.fail(fmt.Errorf("process %d did not exit after SIGKILL", pid))
		}
	}
	if ferr != nil && len(f.named) == 0 {
		// Mountinfo or the mount id unreadable (a kernel before 5.8): the
		// names are still under /run/netns and still to delete.
		names, err := netnsx.ListNamed(prefix)
		t.fail(err)
		return names
	}
	names := make([]string, len(f.named))
	for i, n := range f.named {
		names[i] = n.Name
	}
	return names
}

// deleteNamespaces deletes the named namespaces in teardownOrder.
func (t *teardown) deleteNamespaces(names []string) {
	teardownOrder(names)
	for _, n := range names {
		if err := netnsx.DeleteNamed(n); err != nil {
			t.fail(err)
			continue
		}
		t.removed = append(t.removed, "netns "+n)
	}
}

// teardownOrder sorts namespace names longest first, then by name, so a
// lab's pods go before its nodes ("cnb-x-underlay" sorts between them).
func teardownOrder(names []string) {
	sort.Slice(names, func(i, j int) bool {
		if len(names[i]) != len(names[j]) {
			return len(names[i]) > len(names[j])
		}
		return names[i] < names[j]
	})
}

// removeStateDir removes the lab's state dir, if there is one.
func (t *teardown) removeStateDir(dir string) {
	if _, err := os.Lstat(dir); err == nil {
		if err := os.RemoveAll(dir); err != nil {
			t.fail(err)
		} else {
			t.removed = append(t.removed, "state "+dir)
		}
	}
}
