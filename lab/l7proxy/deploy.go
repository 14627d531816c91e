package l7proxy

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/cnibench/cnibench/lab/haproxy"
)

// Options says where a deployment keeps its things.
type Options struct {
	// Prefix is the lab's prefix ("cnb-<lab>-"): it names the files, the
	// stats sockets and the rules' comment.
	Prefix string
	// StateDir holds the configs, logs and the state file Cleanup reads
	// (the lab's state dir suits: lab down removes it).
	StateDir string
	// CgroupParent, if set, gets one cgroup v2 dir per proxy (l7-<name>)
	// whose cpu.stat is the proxy's CPU (the lab's cgroup root suits).
	CgroupParent string
	// CPUs pins every proxy to these CPUs; nil: not pinned.
	CPUs []int
	// CPUsOf, if set, gives each proxy (by name: "node-node1",
	// "client-node0-pod0", "server-node1-pod0") its own CPUs instead, so a
	// proxy can share the CPUs of the node or pod it serves.
	CPUsOf func(proxy string) []int `json:"-"`
}

// cpus are the CPUs proxy p is pinned to.
func (o Options) cpus(p string) []int {
	if o.CPUsOf != nil {
		return o.CPUsOf(p)
	}
	return o.CPUs
}

// Deployment is a started Spec: its proxies and nat rules.
type Deployment struct {
	Spec    Spec       `json:"spec"`
	Opts    Options    `json:"opts"`
	Proxies []*running `json:"proxies"`
	Rules   []natRule  `json:"rules"`
	// Routes are the egress model's routes to Service addresses.
	Routes []serviceRoute `json:"routes,omitempty"`
	// NatBefore is each rule namespace's nat table before our first rule
	// there, so teardown removes the table and chains we created.
	NatBefore map[string]natState `json:"nat_before,omitempty"`
}

func stateFile(stateDir, prefix string) string {
	return filepath.Join(stateDir, prefix+"l7proxy.json")
}

// Start starts the proxies of spec, then adds the nat rules that send
// traffic to them (proxies first, so no connection is captured before a
// proxy listens). Needs root, haproxy and iptables; the namespaces must
// exist. On error everything started is removed.
func Start(ctx context.Context, spec Spec, opts Options) (*Deployment, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	if opts.Prefix == "" || opts.StateDir == "" {
		return nil, errors.New("l7proxy: Options need Prefix and StateDir")
	}
	if _, err := os.Stat(stateFile(opts.StateDir, opts.Prefix)); err == nil {
		return nil, fmt.Errorf("l7proxy: a deployment of %s is already in %s (Close it, or Cleanup)", opts.Prefix, opts.StateDir)
	}
	d := &Deployment{Spec: spec, Opts: opts}
	ps, rs := plan(spec)
	for _, p := range ps {
		r, err := startProxy(ctx, spec, p, opts)
		d.Proxies = append(d.Proxies, r)
		if err == nil {
			err = d.save()
		}
		if err != nil {
			return nil, errors.Join(err, d.Close())
		}
	}
	for _, rt := range serviceRoutes(spec) {
		d.Routes = append(d.Routes, rt)
		err := d.save()
		if err == nil {
			err = addRoute(ctx, rt)
		}
		if err != nil {
			return nil, errors.Join(err, d.Close())
		}
	}
	for _, r := range rs {
		err := d.recordNat(ctx, r.Netns)
		if err == nil {
			d.Rules = append(d.Rules, r)
			err = d.save()
		}
		if err == nil {
			err = addRule(ctx, r, opts.Prefix)
		}
		if err != nil {
			return nil, errors.Join(err, d.Close())
		}
	}
	return d, nil
}

// owner is how d is saved and taken down: lab/haproxy does it for
// lab/ambient too.
func (d *Deployment) owner() haproxy.Owner[*running] {
	return haproxy.Owner[*running]{
		Pkg: "l7proxy", Prefix: d.Opts.Prefix, State: d,
		StateFile:  stateFile(d.Opts.StateDir, d.Opts.Prefix),
		FilePrefix: filepath.Join(d.Opts.StateDir, d.Opts.Prefix+"l7-"),
		Namespaces: d.ruleNamespaces, Unwire: d.removeRules, Proxies: &d.Proxies,
	}
}

// save records d in the state file, before each new object, so Cleanup
// can find everything after a crash.
func (d *Deployment) save() error { return d.owner().Save() }

// Close removes the rules and the nat tables and chains they needed,
// stops the proxies, removes their cgroups and files. Idempotent.
func (d *Deployment) Close() error { return d.owner().Close() }

// removeRules deletes our rules and routes in ns, then what was created
// for them.
func (d *Deployment) removeRules(ctx context.Context, ns string) error {
	if err := removeRules(ctx, ns, d.Opts.Prefix); err != nil {
		return err
	}
	if err := removeRoutes(ctx, ns); err != nil {
		return err
	}
	if before, ok := d.NatBefore[ns]; ok {
		return restoreNat(ctx, ns, before)
	}
	return nil
}

func (d *Deployment) ruleNamespaces() []string {
	var out []string
	for _, r := range d.Rules {
		out = append(out, r.Netns)
	}
	for _, r := range d.Routes {
		out = append(out, r.Netns)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Usage is the CPU time the proxies have used since they started.
type Usage struct {
	Total   time.Duration            `json:"total"`
	ByProxy map[string]time.Duration `json:"by_proxy"`
}

// CPU reads each proxy's CPU time (cgroup cpu.stat, else /proc stat of
// the live process); take it before and after a run and subtract.
func (d *Deployment) CPU() (Usage, error) {
	u := Usage{ByProxy: map[string]time.Duration{}}
	for _, p := range d.Proxies {
		c, err := p.CPU()
		if err != nil {
			return u, fmt.Errorf("%s: %w", p.Name, err)
		}
		u.ByProxy[p.Name] = c
		u.Total += c
	}
	return u, nil
}

// Memory is what each proxy holds now, in bytes (haproxy.Proc.Memory).
func (d *Deployment) Memory() (map[string]uint64, error) {
	out := map[string]uint64{}
	for _, p := range d.Proxies {
		m, err := p.Memory()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p.Name, err)
		}
		out[p.Name] = m
	}
	return out, nil
}

// Counters reads each proxy's request and denied counters.
func (d *Deployment) Counters() (map[string]Counters, error) {
	out := map[string]Counters{}
	for _, p := range d.Proxies {
		c, err := p.stats()
		if err != nil {
			return out, fmt.Errorf("l7proxy: stats of %s: %w", p.Name, err)
		}
		out[p.Name] = c
	}
	return out, nil
}

// Names lists the proxies, in start order (client sidecar first).
func (d *Deployment) Names() []string {
	out := make([]string, len(d.Proxies))
	for i, p := range d.Proxies {
		out[i] = p.Name
	}
	return out
}

// Log is the last lines each proxy wrote to stderr (alerts, warnings),
// for a failed run's message; Close removes the files.
func (d *Deployment) Log() string {
	var b strings.Builder
	for _, p := range d.Proxies {
		fmt.Fprintf(&b, "%s: %s\n", p.Name, p.LogTail())
	}
	return b.String()
}
