package labtarget

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
	"github.com/cnibench/cnibench/suite"
)

// L7Check is the L7 policy a scenario ran under and how it was proved
// before measuring; results keep it in the target's details.
type L7Check struct {
	Model   string             `json:"model"`
	Rules   []l7proxy.HTTPRule `json:"rules"`
	Proxies []string           `json:"proxies"`
	// Checks: one line per probe made after Verify passed, e.g.
	// "node1-pod0: GET / 200 through [node-node1]; GET /cnb-l7-denied 403 from node-node1".
	Checks []string      `json:"checks"`
	Start  time.Duration `json:"start_ns"` // proxies started, rules added, verified
	// Pinned says where each proxy ran ("node-node1 on CPUs 1").
	Pinned []string `json:"pinned,omitempty"`
}

// l7State is the run's live L7 deployment.
type l7State struct {
	d     *l7proxy.Deployment
	check L7Check
}

// openL7 starts the lab's L7 proxies (lab.Config.L7) in front of the run's
// HTTP servers and verifies, from the client pod, that an allowed request
// gets 200 through every proxy of the model and a denied path gets 403
// from the enforcing proxy, on the pod addresses and on every test
// Service address the run measures. Nothing is measured before.
func (t *Target) openL7(ctx context.Context) error {
	model := t.lab.Config.L7
	if model == "" {
		return nil
	}
	clients, servers, err := t.runPods()
	if err != nil {
		return fmt.Errorf("l7: %w", err)
	}
	spec := l7proxy.Spec{Model: l7proxy.Model(model), Rules: l7proxy.BenchRules, Port: httpload.DefaultPort}
	if spec.Client, err = l7proxy.LabPod(t.lab, clients[0]); err != nil {
		return err
	}
	podIPs := map[string]bool{}
	for _, s := range servers {
		ref, err := l7proxy.LabPod(t.lab, s)
		if err != nil {
			return err
		}
		spec.Servers = append(spec.Servers, ref)
		podIPs[ref.IP] = true
	}
	addrs, note := t.l7Addresses(servers)
	for _, a := range addrs { // the egress model also captures the Services
		if host, _, err := net.SplitHostPort(a); err == nil && !podIPs[host] {
			spec.Services = append(spec.Services, host)
		}
	}
	t.progress("starting %s L7 proxies (HAProxy) for %d server pods ...", model, len(servers))
	start := time.Now()
	stateDir := filepath.Join(t.lab.Config.StateDir, t.lab.Config.Name)
	// A run that crashed on this lab (left up) may have left proxies and
	// rules; the lab lock is ours, so they are no one else's.
	if err := l7proxy.Cleanup(stateDir, t.lab.Prefix); err != nil {
		t.progress(" %s\n", failedOr(ctx))
		return fmt.Errorf("l7 %s: removing what an earlier run left: %w", model, err)
	}
	d, err := l7proxy.Start(ctx, spec, l7proxy.Options{Prefix: t.lab.Prefix, StateDir: stateDir, CgroupParent: t.lab.CgroupRoot, CPUsOf: t.proxyCPUs})
	if err != nil {
		t.progress(" %s\n", failedOr(ctx))
		return fmt.Errorf("l7 %s: %w", model, err)
	}
	t.l7 = &l7State{d: d, check: L7Check{Model: model, Rules: spec.Rules, Proxies: d.Names()}}
	for _, name := range d.Names() {
		if cpus := t.proxyCPUs(name); len(cpus) > 0 {
			t.l7.check.Pinned = append(t.l7.check.Pinned, name+" on CPUs "+cpuList(cpus))
		}
	}
	if err := d.Verify(ctx); err != nil {
		t.progress(" %s\n", failedOr(ctx))
		return fmt.Errorf("l7 %s: %w (proxy log: %s)", model, err, strings.Join(strings.Fields(d.Log()), " "))
	}
	if note != "" {
		t.l7.check.Checks = append(t.l7.check.Checks, note)
	}
	for _, addr := range addrs {
		line, err := t.l7Probe(ctx, addr)
		if err != nil {
			t.progress(" %s\n", failedOr(ctx))
			return err
		}
		t.l7.check.Checks = append(t.l7.check.Checks, line)
	}
	t.l7.check.Start = time.Since(start)
	t.progress(" %d proxies verified (200 allowed, 403 denied) in %s\n", len(d.Names()), t.l7.check.Start.Round(time.Millisecond))
	return nil
}

// l7Addresses are the HTTP server addresses the run's placements dial
// (pod addresses, test Service addresses), each once. A socket-level
// Service datapath translates a ClusterIP at connect() of the lab's pods
// only, not of this process: its Services are left out, and note says
// their traffic reaches the proxies as the pod addresses checked.
func (t *Target) l7Addresses(servers []string) (out []string, note string) {
	sockLB := false
	if v, ok := datapath.Lookup(t.lab.Config.ServiceDatapath); ok && v.Scope == datapath.PerLab {
		sockLB = true
	}
	add := func(ip string) {
		a := net.JoinHostPort(ip, strconv.Itoa(httpload.DefaultPort))
		if !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	for _, pl := range t.cfg.Placements {
		if ts, ok := testServices[pl]; ok {
			if l7Unsupported(t.lab.Config, pl) != nil {
				continue // skipped by Placement, with the reason
			}
			if sockLB {
				note = fmt.Sprintf("ClusterIPs: %s translates them at the client's connect() to the pod addresses checked here", t.lab.Config.ServiceDatapath)
				for _, s := range servers {
					if e, err := t.lab.Endpoint(s); err == nil {
						add(e.IP)
					}
				}
				continue
			}
			add(datapath.TestVIP(ts.vip).String())
			continue
		}
		eps := placementEndpoints[pl]
		if e, err := t.lab.Endpoint(eps[1]); err == nil && e.Kind == "pod" && slices.Contains(servers, eps[1]) {
			add(e.IP)
		}
	}
	return out, note
}

// l7Probe checks one address the benchmark dials: the allowed request
// must pass the model's proxies, the denied path must get 403.
func (t *Target) l7Probe(ctx context.Context, addr string) (string, error) {
	d := t.l7.d
	st, via, err := d.Probe(ctx, addr, "GET", "/")
	if err != nil {
		return "", fmt.Errorf("l7 %s: %w", t.l7.check.Model, err)
	}
	if st != http.StatusOK || !t.modelPath(via) {
		return "", fmt.Errorf("l7 %s: GET http://%s/ got %d through %v, want 200 through the model's proxies: the proxies do not see this path (a ClusterIP translated before their rules, or an eBPF datapath that bypasses netfilter); leave its placement out", t.l7.check.Model, addr, st, via)
	}
	dst, dvia, err := d.Probe(ctx, addr, "GET", l7proxy.DefaultDeniedPath)
	if err != nil {
		return "", fmt.Errorf("l7 %s: %w", t.l7.check.Model, err)
	}
	if dst != http.StatusForbidden || !t.modelPath(dvia) {
		return "", fmt.Errorf("l7 %s: GET http://%s%s got %d through %v, want 403 from the enforcing proxy", t.l7.check.Model, addr, l7proxy.DefaultDeniedPath, dst, dvia)
	}
	return fmt.Sprintf("%s: GET / %d through %s; GET %s %d from %s", addr, st, strings.Join(via, ", "), l7proxy.DefaultDeniedPath, dst, strings.Join(dvia, ", ")), nil
}

// closeL7 stops the proxies and removes their rules.
func (t *Target) closeL7() error {
	if t.l7 == nil || t.l7.d == nil {
		return nil
	}
	err := t.l7.d.Close()
	t.l7.d = nil
	return err
}

// l7Details is the L7 part of Details: nil without L7.
func (t *Target) l7Details() *L7Check {
	if t.l7 == nil {
		return nil
	}
	return &t.l7.check
}

// l7Unsupported says why an L7 scenario cannot proxy a placement: the
// per-node proxy's nat rule matches the server pods' addresses, but a
// netfilter Service datapath translates a same-node ClusterIP in the same
// PREROUTING pass on that node, so the proxy would never see it (on
// other-node the client's node translates, the server's node captures).
func l7Unsupported(cfg lab.Config, placement string) error {
	if cfg.L7 == lab.L7PerNode && placement == suite.PodToServiceSameNode && datapath.Netfilter(cfg.ServiceDatapath) {
		return fmt.Errorf("%s: the per-node L7 proxy does not see a same-node ClusterIP that %s translates in the same nat pass: %w",
			placement, cfg.ServiceDatapath, suite.ErrUnsupported)
	}
	return nil
}

// modelPath tells whether via (the proxies a response passed, server
// side first) is the whole path of the lab's model for some server
// (l7proxy's PathOf). The backend a ClusterIP picks is not known
// beforehand, so any server's path will do.
func (t *Target) modelPath(via []string) bool {
	for _, s := range t.l7.d.Spec.Servers {
		if want, _ := t.l7.d.PathOf(s); slices.Equal(via, want) {
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
func (t *Target) proxyCPUs(proxy string) []int {
	if strings.HasPrefix(proxy, "client-") || t.lab.Config.L7 == lab.L7PerNodeEgress {
		return t.clientCPUs
	}
	return t.serverCPUs
}
