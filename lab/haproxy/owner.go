package haproxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/cnibench/cnibench/internal/netnsx"
)

// Proxy is a package's started proxy: its own type, which embeds Proc.
type Proxy interface {
	Stop() error
	proc() *Proc
}

func (p *Proc) proc() *Proc { return p }

// Owner is how lab/l7proxy and lab/ambient keep a deployment of HAProxy
// processes in a state file and take it down again, so that their save,
// Close and crash Cleanup are one code. Its funcs and Proxies are read
// when called, so they see what Cleanup reads from the state file.
type Owner[P Proxy] struct {
	Pkg        string // names the package in errors: "l7proxy", "ambient"
	Prefix     string // the run's prefix: /run/netns/<Prefix>* are unwired too
	StateFile  string
	State      any    // marshalled to, and read back from, StateFile
	FilePrefix string // starts every file of the run, its configs too
	// Namespaces are those the state changed; Unwire undoes that in one.
	Namespaces func() []string
	Unwire     func(ctx context.Context, ns string) error
	Proxies    *[]P
}

// Save records the state in the state file, before each new object, so
// Cleanup can find everything after a crash.
func (o Owner[P]) Save() error {
	b, err := json.MarshalIndent(o.State, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(o.StateFile, b, 0o644)
}

// Close unwires every namespace, stops the proxies, removes their
// cgroups and every file. Idempotent.
func (o Owner[P]) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var errs []error
	for _, ns := range o.Namespaces() {
		errs = append(errs, o.Unwire(ctx, ns))
	}
	for _, p := range *o.Proxies {
		errs = append(errs, p.Stop())
	}
	errs = append(errs, o.removeFiles())
	return errors.Join(errs...)
}

// Cleanup is Close with no live deployment, after a crash: it reads the
// state file (a missing one is no error), unwires the namespaces it
// names and every /run/netns/<Prefix>*, kills the HAProxy processes whose
// config starts with FilePrefix (found in /proc, so also without the
// state file), runs extra if not nil (what else the package made), then
// removes the proxies' cgroups and the files. Needs root.
func (o Owner[P]) Cleanup(extra func() error) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var errs []error
	if b, err := os.ReadFile(o.StateFile); err == nil {
		if err := json.Unmarshal(b, o.State); err != nil {
			errs = append(errs, fmt.Errorf("%s: state file: %w", o.Pkg, err))
		}
	}
	nss, err := netnsx.PathsWithNamed(o.Namespaces(), o.Prefix)
	errs = append(errs, err)
	for _, ns := range nss {
		errs = append(errs, o.Unwire(ctx, ns))
	}
	for _, pid := range OwnPids(o.FilePrefix) {
		errs = append(errs, KillOwn(pid, o.FilePrefix))
	}
	if extra != nil {
		errs = append(errs, extra())
	}
	errs = append(errs, o.removeFiles())
	return errors.Join(errs...)
}

// removeFiles removes the proxies' cgroups, then every file of the run
// and the state file.
func (o Owner[P]) removeFiles() error {
	var cgroups []string
	for _, p := range *o.Proxies {
		cgroups = append(cgroups, p.proc().Cgroup)
	}
	return removeAll(o.FilePrefix+"*", o.StateFile, cgroups)
}
