package lab

import (
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/cnibench/cnibench/internal/netnsx"
)

// exists reports leftovers of lab name: state dir, namespaces or cgroup.
func exists(stateDir, name string) string {
	if _, err := os.Stat(filepath.Join(stateDir, name)); err == nil {
		return "state dir " + filepath.Join(stateDir, name)
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
