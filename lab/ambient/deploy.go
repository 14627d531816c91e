package ambient

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/cnibench/cnibench/internal/nsexec"
	"github.com/cnibench/cnibench/lab/haproxy"
	"github.com/cnibench/cnibench/lab/l7proxy"
)

// Options says where a mesh keeps its things.
type Options struct {
	// Prefix is the lab's prefix ("cnb-<lab>-"): it names the files, the
	// stats sockets and the rules' comment.
	Prefix string
	// Lab names the run's identities (spiffe://cnibench.lab/<lab>/<node>).
	Lab string
	// StateDir holds the configs, certificates, logs and the state file
	// Cleanup reads (the lab's state dir suits: lab down removes it).
	StateDir string
	// CgroupParent, if set, gets one cgroup v2 dir per proxy (amb-<node>)
	// whose cpu.stat is the proxy's CPU (the lab's cgroup root suits).
	CgroupParent string
	// CPUsOf, if set, pins node's proxy to the CPUs it returns.
	CPUsOf func(node string) []int `json:"-"`
}

// Mesh is a started Spec: a proxy per node and the rules that capture
// the pods' traffic into them.
type Mesh struct {
	Spec    Spec           `json:"spec"`
	Opts    Options        `json:"opts"`
	Proxies []*proxy       `json:"proxies"`
	Rules   []natRule      `json:"rules"`
	Routes  []serviceRoute `json:"routes"`
	// NatBefore is each node's nat table before our first rule, so
	// teardown removes a table and chains created for them.
	NatBefore map[string]l7proxy.NatState `json:"nat_before,omitempty"`
}

func stateFile(stateDir, prefix string) string {
	return filepath.Join(stateDir, prefix+"ambient.json")
}

// filePrefix starts the name of every file of the mesh in stateDir.
func filePrefix(stateDir, prefix string) string { return filepath.Join(stateDir, prefix+"amb-") }

// Start makes the run's certificates, starts every node's proxy, then
// adds the routes and the capture rules (proxies first, so no connection
// is captured before a proxy listens). Needs root, haproxy and iptables.
// On error everything started is removed.
func Start(ctx context.Context, spec Spec, opts Options) (*Mesh, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	if opts.Prefix == "" || opts.StateDir == "" || opts.Lab == "" {
		return nil, errors.New("ambient: Options need Prefix, Lab and StateDir")
	}
	if _, err := os.Stat(stateFile(opts.StateDir, opts.Prefix)); err == nil {
		return nil, fmt.Errorf("ambient: a mesh of %s is already in %s (Close it, or Cleanup)", opts.Prefix, opts.StateDir)
	}
	m := &Mesh{Spec: spec, Opts: opts}
	if err := m.save(); err != nil {
		return nil, err
	}
	cs, err := newCerts(spec, opts.Lab)
	if err != nil {
		return nil, errors.Join(err, m.Close())
	}
	base := filePrefix(opts.StateDir, opts.Prefix)
	ca := base + "ca.pem"
	if err := os.WriteFile(ca, cs.CA, 0o644); err != nil {
		return nil, errors.Join(fmt.Errorf("ambient: %w", err), m.Close())
	}
	if spec.Waypoint != "" {
		if err := os.WriteFile(base+waypointName+".pem", cs.Nodes[waypointName], 0o600); err != nil {
			return nil, errors.Join(fmt.Errorf("ambient: %w", err), m.Close())
		}
	}
	for _, n := range spec.Nodes {
		f := files{CA: ca, Cert: base + n.Name + ".pem", Stats: opts.Prefix + "amb-" + n.Name}
		err := os.WriteFile(f.Cert, cs.Nodes[n.Name], 0o600)
		var p *proxy
		if err == nil {
			p, err = startProxy(ctx, "ztunnel-"+n.Name, n, config(spec, n, f), f.Stats, base+n.Name, opts, parseStat)
		}
		if p != nil {
			m.Proxies = append(m.Proxies, p)
		}
		if err == nil {
			err = m.save()
		}
		if err != nil {
			return nil, errors.Join(err, m.Close())
		}
	}
	for _, rt := range serviceRoutes(spec) {
		m.Routes = append(m.Routes, rt)
		err := m.save()
		if err == nil {
			_, err = nsexec.Run(ctx, rt.Netns, nil, "ip", "-4", "route", "replace", rt.Dst, "dev", "lo", "src", rt.Src, "proto", routeProto)
		}
		if err != nil {
			return nil, errors.Join(fmt.Errorf("ambient: route %s: %w", rt, err), m.Close())
		}
	}
	if err := m.addRules(ctx); err != nil {
		return nil, errors.Join(err, m.Close())
	}
	return m, nil
}

// addRules records each node's nat table, then inserts the capture rules.
func (m *Mesh) addRules(ctx context.Context) error {
	for _, r := range rules(m.Spec) {
		if _, ok := m.NatBefore[r.Netns]; !ok {
			before, ok, err := l7proxy.RecordNat(ctx, r.Netns)
			if err != nil {
				return err
			}
			if ok {
				if m.NatBefore == nil {
					m.NatBefore = map[string]l7proxy.NatState{}
				}
				m.NatBefore[r.Netns] = before
			}
		}
		m.Rules = append(m.Rules, r)
		if err := m.save(); err != nil {
			return err
		}
		if _, err := nsexec.Run(ctx, r.Netns, nil, "iptables", r.insertArgs(tag(m.Opts.Prefix))...); err != nil {
			return fmt.Errorf("ambient: nat rule in %s: %w", r.Netns, err)
		}
	}
	return nil
}

// owner is how m is saved and taken down: lab/haproxy does it for
// lab/l7proxy too.
func (m *Mesh) owner() haproxy.Owner[*proxy] {
	return haproxy.Owner[*proxy]{
		Pkg: "ambient", Prefix: m.Opts.Prefix, State: m,
		StateFile:  stateFile(m.Opts.StateDir, m.Opts.Prefix),
		FilePrefix: filePrefix(m.Opts.StateDir, m.Opts.Prefix),
		Namespaces: m.namespaces, Unwire: m.unwire, Proxies: &m.Proxies,
	}
}

// save records m in the state file, before each new object, so Cleanup
// can find everything after a crash.
func (m *Mesh) save() error { return m.owner().Save() }

// Close removes the rules (and the nat tables and chains created for
// them) and routes, stops the proxies, removes their cgroups and every
// file. Idempotent.
func (m *Mesh) Close() error { return m.owner().Close() }

// Unwire removes the capture rules and routes but leaves the proxies
// running: the pods' traffic then goes straight, which a test uses to
// see the proof fail.
func (m *Mesh) Unwire(ctx context.Context) error {
	var errs []error
	for _, ns := range m.namespaces() {
		errs = append(errs, m.unwire(ctx, ns))
	}
	return errors.Join(errs...)
}

// unwire deletes our rules (a waypoint's too) and routes in ns, then the nat table and
// chains created for them; a namespace gone holds nothing.
func (m *Mesh) unwire(ctx context.Context, ns string) error {
	if _, err := os.Stat(ns); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	for _, t := range []string{waypointTag(m.Opts.Prefix), tag(m.Opts.Prefix)} {
		if err := l7proxy.RemoveTaggedNat(ctx, ns, t); err != nil {
			return err
		}
	}
	if _, err := nsexec.Run(ctx, ns, nil, "ip", "-4", "route", "flush", "proto", routeProto); err != nil {
		return fmt.Errorf("ambient: remove routes in %s: %w", ns, err)
	}
	if before, ok := m.NatBefore[ns]; ok {
		return l7proxy.RestoreNat(ctx, ns, before)
	}
	return nil
}

// namespaces are the node namespaces the mesh has rules or routes in.
func (m *Mesh) namespaces() []string {
	var out []string
	for _, r := range m.Rules {
		out = append(out, r.Netns)
	}
	for _, r := range m.Routes {
		out = append(out, r.Netns)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Counters reads every node proxy's counters, by node.
func (m *Mesh) Counters() (map[string]Counters, error) {
	out := map[string]Counters{}
	for _, p := range m.Proxies {
		c, err := p.counters()
		if err != nil {
			return out, fmt.Errorf("ambient: stats of %s's proxy: %w", p.Node, err)
		}
		out[p.Node] = c
	}
	return out, nil
}

// Names lists the proxies, as "ztunnel-<node>".
func (m *Mesh) Names() []string {
	var out []string
	for _, p := range m.Proxies {
		out = append(out, p.Name)
	}
	return out
}

// Memory is what each proxy holds now, in bytes, by name
// (haproxy.Proc.Memory).
func (m *Mesh) Memory() (map[string]uint64, error) {
	out := map[string]uint64{}
	for _, p := range m.Proxies {
		b, err := p.Memory()
		if err != nil {
			return nil, fmt.Errorf("ambient: memory of %s: %w", p.Name, err)
		}
		out[p.Name] = b
	}
	return out, nil
}

// CPU is each proxy's CPU time so far, by name (Names): its cgroup's
// usage (kept after exit), else its process's; a run takes it before and
// after a sample and subtracts.
func (m *Mesh) CPU() (map[string]time.Duration, error) {
	out := map[string]time.Duration{}
	for _, p := range m.Proxies {
		c, err := p.CPU()
		if err != nil {
			return nil, fmt.Errorf("ambient: CPU of %s: %w", p.Name, err)
		}
		out[p.Name] = c
	}
	return out, nil
}
