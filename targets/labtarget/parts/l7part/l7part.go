// Package l7part is L7 HTTP policy as a scenario part: "l7-node" (one
// HAProxy per server node, Cilium's ingress L7 policy), "l7-egress" (one
// on the client's node, Cilium's egress policy) and "l7-sidecar" (one in
// each pod, Istio), inserted transparently in front of the run's HTTP
// servers (lab/l7proxy) and verified from the client on every address the
// run dials (GET / 200 through the model's proxies, a denied path 403
// from the enforcing one); the proxies' CPU is each sample's datapath CPU.
package l7part

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cnibench/cnibench/datapath"
	"github.com/cnibench/cnibench/engine/httpload"
	"github.com/cnibench/cnibench/lab"
	"github.com/cnibench/cnibench/lab/l7proxy"
	"github.com/cnibench/cnibench/results"
	"github.com/cnibench/cnibench/suite"
	"github.com/cnibench/cnibench/targets/labtarget/part"
)

func init() {
	for _, p := range []l7Part{{"l7-node", "l7n", l7proxy.PerNode}, {"l7-egress", "l7e", l7proxy.PerNodeEgress}, {"l7-sidecar", "l7s", l7proxy.Sidecar}} {
		part.One(p)
	}
}

// l7Part is one L7 proxy model.
type l7Part struct {
	name, token string
	model       l7proxy.Model
}

func (p l7Part) Name() string          { return p.name }
func (p l7Part) Token() string         { return p.token }
func (p l7Part) Phase() part.Phase     { return part.L7 }
func (p l7Part) Configure(*lab.Config) {}

// Conflicts: two L7 models (one would silently win).
func (p l7Part) Conflicts(s part.Scenario) error {
	if len(s.Others(p, func(q part.Part) bool { return q.Phase() == part.L7 })) > 0 {
		return fmt.Errorf("l7-node, l7-egress and l7-sidecar are L7 models: choose one")
	}
	return nil
}

// Sweep removes the proxies and rules a run that crashed on this lab
// (left up) may have left; the lab lock is ours, so they are no one else's.
func (p l7Part) Sweep(ctx context.Context, env part.Env) error {
	l := env.Lab()
	if err := l7proxy.Cleanup(filepath.Join(l.Config.StateDir, l.Config.Name), l.Prefix); err != nil {
		return fmt.Errorf("l7 %s: removing what an earlier run left: %w", p.model, err)
	}
	return nil
}

// Open starts the proxies in front of the run's HTTP servers and
// verifies them on every address the run dials. Nothing is measured before.
func (p l7Part) Open(ctx context.Context, env part.Env) (part.Opened, error) {
	l := env.Lab()
	clients, servers, err := env.RunPods()
	if err != nil {
		return nil, fmt.Errorf("l7: %w", err)
	}
	spec := l7proxy.Spec{Model: p.model, Rules: l7proxy.BenchRules, Port: httpload.DefaultPort}
	if spec.Client, err = l7proxy.LabPod(l, clients[0]); err != nil {
		return nil, err
	}
	podIPs := map[string]bool{}
	for _, s := range servers {
		ref, err := l7proxy.LabPod(l, s)
		if err != nil {
			return nil, err
		}
		spec.Servers = append(spec.Servers, ref)
		podIPs[ref.IP] = true
	}
	addrs, note := p.addresses(env, servers)
	for _, a := range addrs { // the egress model also captures the Services
		if host, _, err := net.SplitHostPort(a); err == nil && !podIPs[host] {
			spec.Services = append(spec.Services, host)
		}
	}
	env.Progress("starting %s L7 proxies (HAProxy) for %d server pods ...", p.model, len(servers))
	o, err := p.start(ctx, env, spec, addrs, note)
	if err != nil {
		env.Progress(" %s\n", part.FailedOr(ctx))
		return o, err
	}
	env.Progress(" %d proxies verified (200 allowed, 403 denied) in %s\n", len(o.d.Names()), o.check.Start.Round(time.Millisecond))
	return o, nil
}

// start starts the proxies, verifies them and probes every address.
func (p l7Part) start(ctx context.Context, env part.Env, spec l7proxy.Spec, addrs []string, note string) (*opened, error) {
	l := env.Lab()
	start := time.Now()
	cpus := func(proxy string) []int { return p.proxyCPUs(env, proxy) }
	d, err := l7proxy.Start(ctx, spec, l7proxy.Options{Prefix: l.Prefix, StateDir: filepath.Join(l.Config.StateDir, l.Config.Name), CgroupParent: l.CgroupRoot, CPUsOf: cpus})
	if err != nil {
		return nil, fmt.Errorf("l7 %s: %w", p.model, err)
	}
	o := &opened{part: p, lab: l, d: d, check: results.L7Check{Model: string(p.model), Proxies: d.Names()}}
	for _, r := range spec.Rules {
		o.check.Rules = append(o.check.Rules, results.L7Rule(r))
	}
	for _, name := range d.Names() {
		if c := cpus(name); len(c) > 0 {
			o.check.Pinned = append(o.check.Pinned, name+" on CPUs "+part.CPUList(c))
		}
	}
	if err := d.Verify(ctx); err != nil {
		return o, fmt.Errorf("l7 %s: %w (proxy log: %s)", p.model, err, strings.Join(strings.Fields(d.Log()), " "))
	}
	if note != "" {
		o.check.Checks = append(o.check.Checks, note)
	}
	for _, addr := range addrs {
		line, err := o.probe(ctx, addr)
		if err != nil {
			return o, err
		}
		o.check.Checks = append(o.check.Checks, line)
	}
	o.check.Start = time.Since(start)
	return o, nil
}

// opened is the run's live L7 deployment.
type opened struct {
	part  l7Part
	d     *l7proxy.Deployment
	check results.L7Check
	lab   *lab.Lab
}

// Checks implements part.Opened.
func (o *opened) Checks() []results.Check {
	return []results.Check{{Part: o.part.name, Label: results.L7Label, Text: o.check.Text()}}
}

// AddDetails implements part.Detailer.
func (o *opened) AddDetails(d map[string]any) { d["l7"] = o.check }

// Close stops the proxies and removes their rules.
func (o *opened) Close() error {
	if o.d == nil {
		return nil
	}
	err := o.d.Close()
	o.d = nil
	return err
}

// Unsupported implements part.Limiter.
func (o *opened) Unsupported(placement string) error {
	return o.part.unsupported(o.lab.Config.ServiceDatapath, placement)
}

// StartUsage implements part.Meter: the proxies' CPU so far.
func (o *opened) StartUsage(context.Context) (any, error) { return o.d.CPU() }

// EndUsage implements part.Meter: each proxy's CPU since mark and its
// memory now.
func (o *opened) EndUsage(_ context.Context, mark any, u *results.DatapathUsage) error {
	before, _ := mark.(l7proxy.Usage)
	now, err := o.d.CPU()
	if err != nil {
		return err
	}
	mem, err := o.d.Memory()
	if err != nil {
		return err
	}
	for _, name := range o.d.Names() {
		u.Components = append(u.Components, results.ComponentUsage{Plugin: "haproxy-" + o.check.Model, Pod: name,
			CPUSec: (now.ByProxy[name] - before.ByProxy[name]).Seconds(), MemoryBytes: mem[name]})
	}
	return nil
}

// unsupported says why the model cannot proxy a placement: the per-node
// proxy's nat rule matches the server pods' addresses, but a netfilter
// Service datapath translates a same-node ClusterIP in the same
// PREROUTING pass on that node, so the proxy would never see it (on
// other-node the client's node translates, the server's node captures).
func (p l7Part) unsupported(serviceDatapath, placement string) error {
	if p.model == l7proxy.PerNode && placement == suite.PodToServiceSameNode && datapath.Netfilter(serviceDatapath) {
		return fmt.Errorf("%s: the per-node L7 proxy does not see a same-node ClusterIP that %s translates in the same nat pass: %w",
			placement, serviceDatapath, suite.ErrUnsupported)
	}
	return nil
}

// l7Addresses are the HTTP server addresses the run's placements dial
// (pod addresses, test Service addresses), each once. A socket-level
// Service datapath translates a ClusterIP at connect() of the lab's pods
// only, not of this process: its Services are left out, and note says
// their traffic reaches the proxies as the pod addresses checked.
func (p l7Part) addresses(env part.Env, servers []string) (out []string, note string) {
	l := env.Lab()
	sockLB := false
	if v, ok := datapath.Lookup(l.Config.ServiceDatapath); ok && v.Scope == datapath.PerLab {
		sockLB = true
	}
	add := func(ip string) {
		a := net.JoinHostPort(ip, strconv.Itoa(httpload.DefaultPort))
		if !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	for _, pl := range env.Placements() {
		if vip, ok := env.ServiceVIP(pl); ok {
			if p.unsupported(l.Config.ServiceDatapath, pl) != nil {
				continue // skipped by Placement, with the reason
			}
			if sockLB {
				note = fmt.Sprintf("ClusterIPs: %s translates them at the client's connect() to the pod addresses checked here", l.Config.ServiceDatapath)
				for _, s := range servers {
					if e, err := l.Endpoint(s); err == nil {
						add(e.IP)
					}
				}
				continue
			}
			add(vip)
			continue
		}
		for _, s := range env.PlacementServers(pl) {
			if e, err := l.Endpoint(s); err == nil && e.Kind == "pod" && slices.Contains(servers, s) {
				add(e.IP)
			}
		}
	}
	return out, note
}

// l7Probe checks one address the benchmark dials: the allowed request
// must pass the model's proxies, the denied path must get 403.
func (o *opened) probe(ctx context.Context, addr string) (string, error) {
	d := o.d
	st, via, err := d.Probe(ctx, addr, "GET", "/")
	if err != nil {
		return "", fmt.Errorf("l7 %s: %w", o.check.Model, err)
	}
	if st != http.StatusOK || !o.modelPath(via) {
		return "", fmt.Errorf("l7 %s: GET http://%s/ got %d through %v, want 200 through the model's proxies: the proxies do not see this path (a ClusterIP translated before their rules, or an eBPF datapath that bypasses netfilter); leave its placement out", o.check.Model, addr, st, via)
	}
	dst, dvia, err := d.Probe(ctx, addr, "GET", l7proxy.DefaultDeniedPath)
	if err != nil {
		return "", fmt.Errorf("l7 %s: %w", o.check.Model, err)
	}
	if dst != http.StatusForbidden || !o.modelPath(dvia) {
		return "", fmt.Errorf("l7 %s: GET http://%s%s got %d through %v, want 403 from the enforcing proxy", o.check.Model, addr, l7proxy.DefaultDeniedPath, dst, dvia)
	}
	return fmt.Sprintf("%s: GET / %d through %s; GET %s %d from %s", addr, st, strings.Join(via, ", "), l7proxy.DefaultDeniedPath, dst, strings.Join(dvia, ", ")), nil
}

// modelPath tells whether via (the proxies a response passed, server
// side first) is the whole path of the lab's model for some server
// (l7proxy's PathOf). The backend a ClusterIP picks is not known
// beforehand, so any server's path will do.
func (o *opened) modelPath(via []string) bool {
	for _, s := range o.d.Spec.Servers {
		if want, _ := o.d.PathOf(s); slices.Equal(via, want) {
			return true
		}
	}
	return false
}

// proxyCPUs pins a proxy where its node's or pod's own work runs, as a
// node's proxy competes with the node's pods for its CPUs: the client's
// sidecar and the egress proxy (on the client's node) on the client CPUs,
// server sidecars and the ingress per-node proxies (on the server nodes)
// on the server CPUs; unpinned on one CPU.
func (p l7Part) proxyCPUs(env part.Env, proxy string) []int {
	if strings.HasPrefix(proxy, "client-") || p.model == l7proxy.PerNodeEgress {
		return env.ClientCPUs()
	}
	return env.ServerCPUs()
}
