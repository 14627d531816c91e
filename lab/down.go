package lab

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/cnibench/cnibench/internal/netnsx"
	"golang.org/x/sys/unix"
)

// Down removes lab name: it kills the lab's processes (by cgroup and by
// network namespace), deletes its namespaces, cgroups and state dir. It is
// idempotent and needs no state file: it finds objects by their prefix.
// removed lists what it removed or killed.
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
	prefix := Prefix(name)
	var errs []error

	roots := map[string]bool{}
	if r := cgroupRootFor(name); r != "" {
		roots[r] = true
	}
	if l, lerr := Load(stateDir, name); lerr == nil && l.CgroupRoot != "" &&
		filepath.Base(l.CgroupRoot) == "cnb-"+name {
		roots[l.CgroupRoot] = true
	}

	// 1. Processes in the lab's cgroups.
	for r := range roots {
		k, kerr := killCgroup(r, killTimeout)
		removed = append(removed, k...)
		if kerr != nil {
			errs = append(errs, kerr)
		}
	}

	// 2. Processes in the lab's namespaces (started without a cgroup, or
	// entered from outside, e.g. by `ip netns exec`).
	names, lerr := netnsx.ListNamed(prefix)
	if lerr != nil {
		errs = append(errs, lerr)
	}
	ids := map[netnsx.ID]string{}
	for _, n := range names {
		if id, err := netnsx.IDOf(netnsx.Path(n)); err == nil {
			ids[id] = n
		}
	}
	pids, perr := netnsx.PidsIn(ids)
	if perr != nil {
		errs = append(errs, perr)
	}
	var victims []int
	for ns, ps := range pids {
		for _, pid := range ps {
			removed = append(removed, fmt.Sprintf("process %d (%s) in netns %s", pid, netnsx.Comm(pid), ns))
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
			errs = append(errs, fmt.Errorf("process %d did not exit after SIGKILL", pid))
		}
	}

	// 3. Namespaces: pods, then nodes, then the underlay.
	sort.Slice(names, func(i, j int) bool {
		if len(names[i]) != len(names[j]) {
			return len(names[i]) > len(names[j])
		}
		return names[i] < names[j]
	})
	for _, n := range names {
		if err := netnsx.DeleteNamed(n); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, "netns "+n)
	}

	// 4. Cgroups, deepest first.
	for r := range roots {
		rm, rerr := removeCgroups(r, rmdirTimeout)
		for _, d := range rm {
			removed = append(removed, "cgroup "+d)
		}
		if rerr != nil {
			errs = append(errs, rerr)
		}
	}

	// 5. State dir.
	dir := filepath.Join(stateDir, name)
	if _, err := os.Lstat(dir); err == nil {
		if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, err)
		} else {
			removed = append(removed, "state "+dir)
		}
	}
	if len(errs) > 0 {
		msgs := make([]string, len(errs))
		for i, e := range errs {
			msgs[i] = e.Error()
		}
		return removed, fmt.Errorf("lab %q down: %s", name, strings.Join(msgs, "; "))
	}
	return removed, nil
}
