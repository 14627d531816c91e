package l7proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/cnibench/cnibench/internal/netnsx"
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
	for _, pid := range ownPids(filepath.Join(stateDir, prefix+"l7-")) {
		errs = append(errs, killOwn(pid, filepath.Join(stateDir, prefix+"l7-")))
	}
	errs = append(errs, removeFiles(stateDir, prefix, d.Proxies))
	return errors.Join(errs...)
}

// ownPids are the processes whose command line contains cfgPrefix.
func ownPids(cfgPrefix string) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline"); err == nil && strings.Contains(string(b), cfgPrefix) {
			out = append(out, pid)
		}
	}
	return out
}

// killOwn kills pid if its command line still names cfg (a pid may be
// reused), SIGTERM then SIGKILL after 3 s, and waits for it to go. An
// exiting process's command line reads empty before it is a zombie, so
// an empty one counts as ours until the process is gone.
func killOwn(pid int, cfg string) error {
	alive := func() bool {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		return err == nil && (strings.Contains(string(b), cfg) || len(b) == 0 && netnsx.Alive(pid))
	}
	if !alive() {
		return nil
	}
	syscall.Kill(pid, syscall.SIGTERM)
	for i := 0; i < 300 && alive(); i++ {
		if i == 150 {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if alive() {
		return fmt.Errorf("l7proxy: pid %d (%s) survived SIGKILL", pid, cfg)
	}
	return nil
}

// removeFiles removes the proxies' cgroups, then every <prefix>l7-* file
// and the state file in stateDir.
func removeFiles(stateDir, prefix string, ps []*running) error {
	var errs []error
	for _, p := range ps {
		if p.Cgroup != "" {
			errs = append(errs, rmdirCgroup(p.Cgroup))
		}
	}
	files, _ := filepath.Glob(filepath.Join(stateDir, prefix+"l7-*"))
	files = append(files, stateFile(stateDir, prefix))
	for _, f := range files {
		if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("l7proxy: %w", err))
		}
	}
	return errors.Join(errs...)
}

// rmdirCgroup removes an emptied cgroup dir, retrying for 1 s while the
// kernel still counts the reaped process (EBUSY).
func rmdirCgroup(dir string) error {
	for i := 0; ; i++ {
		err := os.Remove(dir)
		if err == nil || errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if !errors.Is(err, syscall.EBUSY) || i == 50 {
			return fmt.Errorf("l7proxy: %w", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
