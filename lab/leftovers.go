package lab

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/cnibench/cnibench/internal/netnsx"
)

// exists reports leftovers of lab name: state dir, namespaces, cgroup or
// temporary directories.
func exists(stateDir, name string) string {
	if _, err := os.Stat(filepath.Join(stateDir, name)); err == nil {
		return "state dir " + filepath.Join(stateDir, name)
	}
	if d := tempDirs(Prefix(name)); len(d) > 0 {
		return "temp dir " + d[0]
	}
	if ns, _ := netnsx.ListNamed(Prefix(name)); len(ns) > 0 {
		return "namespace " + netnsx.Path(ns[0])
	}
	if r := cgroupRootFor(name); r != "" {
		if _, err := os.Stat(r); err == nil {
			return "cgroup " + r
		}
	}
	return ""
}

// List returns the names of labs found in stateDir or as leftover
// namespaces or cgroups, sorted.
func List(stateDir string) ([]string, error) {
	if stateDir == "" {
		stateDir = DefaultStateDir
	}
	set := map[string]bool{}
	ents, err := os.ReadDir(stateDir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	for _, e := range ents {
		if e.IsDir() && ValidName(e.Name()) == nil {
			set[e.Name()] = true
		}
	}
	fromPrefixed := func(s string) {
		if n := labNameOf(s); n != "" {
			set[n] = true
		}
	}
	nss, err := netnsx.ListNamed("cnb-")
	if err != nil {
		return nil, err
	}
	for _, n := range nss {
		if strings.Count(n, "-") >= 2 {
			fromPrefixed(n)
		}
	}
	if m := cgroup2Mount(); m != "" {
		cg, _ := os.ReadDir(m)
		for _, e := range cg {
			if e.IsDir() && strings.Count(e.Name(), "-") == 1 {
				fromPrefixed(e.Name())
			}
		}
	}
	out := make([]string, 0, len(set))
	for n := range set {
		out = append(out, n)
	}
	sort.Strings(out)
	return out, nil
}

// labNameOf returns the lab name in an object name "cnb-<name>" or
// "cnb-<name>-...", or "" if s is not one.
func labNameOf(s string) string {
	rest, ok := strings.CutPrefix(s, "cnb-")
	if !ok {
		return ""
	}
	if i := strings.IndexByte(rest, '-'); i >= 0 {
		rest = rest[:i]
	}
	if ValidName(rest) != nil {
		return ""
	}
	return rest
}

// nsFound is what exists now of a lab's namespaces and the processes in them.
type nsFound struct {
	named   []netnsx.Named
	pids    map[string][]int // by namespace name, or loopback tag when unnamed
	unnamed map[string]bool  // namespaces in pids no name under /run/netns leads to
}

// findNamespaces finds the namespaces named with prefix, whether the name
// shows the namespace or a cover of /run/netns hides its mount, and the
// processes inside them; and processes in namespaces whose name is gone,
// by the loopback tag Up gave each namespace.
func findNamespaces(prefix string) (nsFound, error) {
	f := nsFound{unnamed: map[string]bool{}}
	named, err := netnsx.InspectNamed(prefix)
	if err != nil {
		return f, err
	}
	f.named = named
	ids := map[netnsx.ID]string{}
	for _, n := range named {
		for _, id := range n.IDs {
			ids[id] = n.Name
		}
	}
	f.pids, err = netnsx.PidsIn(ids)
	if err != nil {
		return f, err
	}
	tagged, err := netnsx.PidsTagged(prefix, ids)
	for tag, pids := range tagged {
		f.pids[tag] = append(f.pids[tag], pids...)
		f.unnamed[tag] = true
	}
	return f, err
}

// note qualifies namespace ns in a message when no name leads to it.
func (f nsFound) note(ns string) string {
	if f.unnamed[ns] {
		return " (its name under /run/netns is gone)"
	}
	return ""
}

// Leftovers lists, one line each, what exists of lab name when its state
// says it is not up (or there is no state): state dir, namespaces and what
// state each is in, processes inside them, cgroups, temporary directories.
// `lab down` removes all of it.
func Leftovers(stateDir, name string) ([]string, error) {
	if err := ValidName(name); err != nil {
		return nil, err
	}
	if stateDir == "" {
		stateDir = DefaultStateDir
	}
	var out []string
	if dir := filepath.Join(stateDir, name); pathExists(dir) {
		out = append(out, "state dir "+dir)
	}
	f, err := findNamespaces(Prefix(name))
	for _, n := range f.named {
		out = append(out, fmt.Sprintf("netns %s: %s", n.Name, n.State()))
	}
	for _, ns := range slices.Sorted(maps.Keys(f.pids)) {
		for _, pid := range f.pids[ns] {
			out = append(out, fmt.Sprintf("process %d (%s) in netns %s%s", pid, netnsx.Comm(pid), ns, f.note(ns)))
		}
	}
	for r := range cgroupRoots(stateDir, name) {
		if pathExists(r) {
			n := 0
			for _, d := range cgroupDirs(r) {
				n += len(cgroupProcs(d))
			}
			out = append(out, fmt.Sprintf("cgroup %s (%d processes)", r, n))
		}
	}
	for _, d := range tempDirs(Prefix(name)) {
		out = append(out, "temp dir "+d)
	}
	return out, err
}

// tempDirs lists the temporary directories of lab processes (Lab.TempDir)
// in this process's temp root: named as an endpoint's namespace, prefix
// and "node", unlike other cnb-* directories there (cnb-dnsload-*).
func tempDirs(prefix string) []string {
	paths, _ := filepath.Glob(filepath.Join(os.TempDir(), prefix+"node*"))
	var dirs []string
	for _, p := range paths {
		if fi, err := os.Lstat(p); err == nil && fi.IsDir() {
			dirs = append(dirs, p)
		}
	}
	return dirs
}

// pathExists reports whether path exists.
func pathExists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}
