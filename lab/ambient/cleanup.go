package ambient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/cnibench/cnibench/internal/netnsx"
	"github.com/cnibench/cnibench/lab/haproxy"
)

// Cleanup removes what a mesh of prefix in stateDir left after a crash,
// with no live Mesh: the tagged rules (a waypoint's too) and routes in the namespaces the
// state file names and in every /run/netns/<prefix>*, the HAProxy
// processes whose command line names a config <stateDir>/<prefix>amb-*
// (found in /proc, so also without the state file), the proxies'
// cgroups and the files. Lab down deletes the namespaces and cgroups
// anyway; Cleanup is for a lab that stays up. Idempotent; needs root.
func Cleanup(stateDir, prefix string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var errs []error
	m := &Mesh{Opts: Options{Prefix: prefix, StateDir: stateDir}}
	if b, err := os.ReadFile(stateFile(stateDir, prefix)); err == nil {
		if err := json.Unmarshal(b, m); err != nil {
			errs = append(errs, fmt.Errorf("ambient: state file: %w", err))
		}
	}
	nss, err := netnsx.PathsWithNamed(m.namespaces(), prefix)
	errs = append(errs, err)
	for _, ns := range nss {
		errs = append(errs, m.unwire(ctx, ns))
	}
	cfgs := filePrefix(stateDir, prefix)
	for _, pid := range haproxy.OwnPids(cfgs) {
		errs = append(errs, haproxy.KillOwn(pid, cfgs))
	}
	if m.Opts.CgroupParent != "" {
		errs = append(errs, haproxy.RemoveCgroup(filepath.Join(m.Opts.CgroupParent, "amb-"+waypointName)))
	}
	errs = append(errs, removeFiles(stateDir, prefix, m.Proxies))
	return errors.Join(errs...)
}

// removeFiles removes the proxies' cgroups, then every <prefix>amb-* file
// and the state file in stateDir.
func removeFiles(stateDir, prefix string, ps []*proxy) error {
	var cgroups []string
	for _, p := range ps {
		cgroups = append(cgroups, p.Cgroup)
	}
	return haproxy.RemoveFiles(filePrefix(stateDir, prefix)+"*", stateFile(stateDir, prefix), cgroups)
}
