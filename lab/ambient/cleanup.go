package ambient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/cnibench/cnibench/internal/netnsx"
	"github.com/cnibench/cnibench/lab/l7proxy"
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
	for _, pid := range l7proxy.OwnPids(cfgs) {
		errs = append(errs, l7proxy.KillOwn(pid, cfgs))
	}
	if m.Opts.CgroupParent != "" {
		errs = append(errs, l7proxy.RemoveCgroup(filepath.Join(m.Opts.CgroupParent, "amb-"+waypointName)))
	}
	errs = append(errs, removeFiles(stateDir, prefix, m.Proxies))
	return errors.Join(errs...)
}

// removeFiles removes the proxies' cgroups, then every <prefix>amb-* file
// and the state file in stateDir.
func removeFiles(stateDir, prefix string, ps []*proxy) error {
	var errs []error
	for _, p := range ps {
		if p.Cgroup != "" {
			errs = append(errs, l7proxy.RemoveCgroup(p.Cgroup))
		}
	}
	files, _ := filepath.Glob(filePrefix(stateDir, prefix) + "*")
	files = append(files, stateFile(stateDir, prefix))
	for _, f := range files {
		if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("ambient: %w", err))
		}
	}
	return errors.Join(errs...)
}

// cgroupCPU reads usage_usec of dir's cpu.stat.
func cgroupCPU(dir string) (time.Duration, error) {
	b, err := os.ReadFile(filepath.Join(dir, "cpu.stat"))
	if err != nil {
		return 0, fmt.Errorf("ambient: %w", err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "usage_usec "); ok {
			us, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("ambient: cpu.stat usage_usec %q: %w", v, err)
			}
			return time.Duration(us) * time.Microsecond, nil
		}
	}
	return 0, errors.New("ambient: cpu.stat has no usage_usec")
}
