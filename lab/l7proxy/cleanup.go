package l7proxy

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

// Cleanup removes what a deployment of prefix in stateDir left after a
// crash, with no live Deployment: it deletes the tagged nat rules in the
// namespaces the state file names and in every /run/netns/<prefix>*
// (and the nat tables and chains the state file says were created for
// them; without it those stay, as they cannot be told from others'),
// kills the HAProxy processes whose command line names a config
// <stateDir>/<prefix>l7-*.cfg (found by scanning /proc, so even without
// the state file), removes the proxies' cgroups and the files. Lab down
// kills processes in the lab's namespaces and cgroups and deletes them
// anyway; Cleanup is for a lab that stays up. Idempotent; needs root.
func Cleanup(stateDir, prefix string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var errs []error
	d := &Deployment{Opts: Options{Prefix: prefix, StateDir: stateDir}}
	if b, err := os.ReadFile(stateFile(stateDir, prefix)); err == nil {
		if err := json.Unmarshal(b, d); err != nil {
			errs = append(errs, fmt.Errorf("l7proxy: state file: %w", err))
		}
	}
	nss, err := netnsx.PathsWithNamed(d.ruleNamespaces(), prefix)
	errs = append(errs, err)
	for _, ns := range nss {
		errs = append(errs, d.removeRules(ctx, ns))
	}
	for _, pid := range haproxy.OwnPids(filepath.Join(stateDir, prefix+"l7-")) {
		errs = append(errs, haproxy.KillOwn(pid, filepath.Join(stateDir, prefix+"l7-")))
	}
	errs = append(errs, removeFiles(stateDir, prefix, d.Proxies))
	return errors.Join(errs...)
}

// removeFiles removes the proxies' cgroups, then every <prefix>l7-* file
// and the state file in stateDir.
func removeFiles(stateDir, prefix string, ps []*running) error {
	var cgroups []string
	for _, p := range ps {
		cgroups = append(cgroups, p.Cgroup)
	}
	return haproxy.RemoveFiles(filepath.Join(stateDir, prefix+"l7-*"), stateFile(stateDir, prefix), cgroups)
}
