// Package ambientpart is Istio's ambient model as a scenario part,
// "ambient": a per-node L4 proxy (ztunnel's role, HAProxy) takes every
// pod's TCP to other pods and Services and carries it to the destination
// node's proxy in mutual TLS (lab/ambient). Proved before anything is
// measured: a probe from the client pod to a pod on another node is
// echoed while a capture on that node's link sees TLS and never the
// probe's payload, and the proxies count the connection. The proxies'
// CPU is each sample's datapath CPU.
package ambientpart

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cnibench/cnibench/datapath"
	"github.com/cnibench/cnibench/engine/httpload"
	"github.com/cnibench/cnibench/lab"
	"github.com/cnibench/cnibench/lab/ambient"
	"github.com/cnibench/cnibench/results"
	"github.com/cnibench/cnibench/suite"
	"github.com/cnibench/cnibench/targets/labtarget/part"
)

// Name is the part as --scenarios writes it.
const Name = "ambient"

func init() { part.One(mesh{}) }

// mesh is the ambient part.
type mesh struct{}

func (mesh) Name() string  { return Name }
func (mesh) Token() string { return "amb" }

// Phase: L7, so the Services and policy are in place first and a flows
// recorder after; an L7 model and the ambient mesh exclude each other.
func (mesh) Phase() part.Phase     { return part.L7 }
func (mesh) Configure(*lab.Config) {}

// Conflicts: what the mesh cannot go with, and why.
func (p mesh) Conflicts(s part.Scenario) error {
	var errs []string
	if q := s.Others(p, func(q part.Part) bool { return q.Phase() == part.L7 && q.Name() != WaypointName }); len(q) > 0 {
		errs = append(errs, fmt.Sprintf("%s is an L7 proxy model of its own", q[0].Name()))
	}
	if q := s.Others(p, func(q part.Part) bool { return q.Phase() == part.Policy }); len(q) > 0 {
		errs = append(errs, fmt.Sprintf("%s would deny the proxies, which connect from their node's address", q[0].Name()))
	}
	if s.Lab.Encryption != "" {
		errs = append(errs, fmt.Sprintf("%s encrypts between the nodes already (the mesh's proof captures TLS on the node link)", s.Lab.Encryption))
	}
	if sd := s.Lab.ServiceDatapath; sd != "" && !datapath.Netfilter(sd) {
		errs = append(errs, fmt.Sprintf("%s translates ClusterIPs outside netfilter, where the node's proxy would not see them (use a netfilter Service datapath such as iptables)", sd))
	}
	if len(errs) > 0 {
		return fmt.Errorf("ambient cannot go with this scenario: %s", strings.Join(errs, "; "))
	}
	return nil
}

// Sweep removes the proxies, rules and files a run that crashed on this
// lab (left up) may have left; the lab lock is ours.
func (mesh) Sweep(ctx context.Context, env part.Env) error {
	l := env.Lab()
	if err := ambient.Cleanup(stateDir(l), l.Prefix); err != nil {
		return fmt.Errorf("ambient: removing what an earlier run left: %w", err)
	}
	return nil
}

func stateDir(l *lab.Lab) string { return filepath.Join(l.Config.StateDir, l.Config.Name) }

// Open starts a proxy per node, captures the pods' traffic into them and
// proves the inter-node hop is mutual TLS. Nothing is measured before.
func (p mesh) Open(ctx context.Context, env part.Env) (part.Opened, error) {
	l := env.Lab()
	from, to, err := proofPods(env)
	if err != nil {
		return nil, err
	}
	env.Progress("starting the ambient mesh (HAProxy per node, mTLS between nodes) on %d nodes ...", len(l.Nodes))
	start := time.Now()
	nodeIndex := map[string]int{}
	for i, n := range l.Nodes {
		nodeIndex[n.Name] = i
	}
	spec := ambient.FromLab(l)
	spec.Waypoint = to.Node
	m, err := ambient.Start(ctx, spec, ambient.Options{Prefix: l.Prefix, Lab: l.Config.Name, StateDir: stateDir(l),
		CgroupParent: l.CgroupRoot, CPUsOf: func(node string) []int { return env.NodeCPUs(nodeIndex[node]) }})
	if err != nil {
		env.Progress(" %s\n", part.FailedOr(ctx))
		return nil, err
	}
	o := &opened{lab: l, m: m, client: from}
	register(l.Prefix, o)
	line, err := m.Prove(ctx, from, to)
	if err != nil {
		env.Progress(" %s\n", part.FailedOr(ctx))
		return o, err
	}
	o.check = line
	for _, addr := range serviceAddrs(env) {
		line, err := m.ProveHTTP(ctx, from, addr)
		if err != nil {
			env.Progress(" %s\n", part.FailedOr(ctx))
			return o, err
		}
		o.check += "; " + line
	}
	for i, n := range l.Nodes {
		if c := env.NodeCPUs(i); len(c) > 0 {
			o.pinned = append(o.pinned, "ztunnel-"+n.Name+" on CPUs "+part.CPUList(c))
		}
	}
	env.Progress(" %d proxies, mTLS proved in %s\n", len(m.Proxies), time.Since(start).Round(time.Millisecond))
	return o, nil
}

// serviceAddrs are the HTTP addresses of the ClusterIPs the run dials
// through the mesh (the same-node one is skipped: Unsupported).
func serviceAddrs(env part.Env) []string {
	var out []string
	for _, pl := range env.Placements() {
		if vip, ok := env.ServiceVIP(pl); ok && pl != suite.PodToServiceSameNode {
			out = append(out, net.JoinHostPort(vip, strconv.Itoa(httpload.DefaultPort)))
		}
	}
	return out
}

// proofPods are the pods the proof connects: the run's first client and
// a server on another node, else any pod on another node. A waypoint
// would run on the latter's node (the node proxies know its address
// from the start): the servers', where the other-node ClusterIP's
// endpoints are.
func proofPods(env part.Env) (from, to ambient.Pod, err error) {
	l := env.Lab()
	clients, servers, err := env.RunPods()
	if err != nil {
		return from, to, fmt.Errorf("ambient: %w", err)
	}
	if len(clients) == 0 {
		return from, to, errors.New("ambient: the run has no client pod to prove the mesh from")
	}
	if from, err = ambient.LabPod(l, clients[0]); err != nil {
		return from, to, err
	}
	var candidates []string
	candidates = append(candidates, servers...)
	for _, n := range l.Nodes {
		for _, q := range n.Pods {
			candidates = append(candidates, q.Name)
		}
	}
	for _, c := range candidates {
		if to, err = ambient.LabPod(l, c); err == nil && to.Node != from.Node {
			return from, to, nil
		}
	}
	return from, to, fmt.Errorf("ambient: the lab has no pod on a node other than %s's: the mesh needs 2 nodes to prove its tunnel", from.Name)
}

// opened is the run's live mesh.
type opened struct {
	lab    *lab.Lab
	m      *ambient.Mesh
	client ambient.Pod // the proof's client, the waypoint's too
	check  string
	pinned []string
}

// Checks implements part.Opened.
func (o *opened) Checks() []results.Check {
	text := o.check
	if len(o.pinned) > 0 {
		text += "; " + strings.Join(o.pinned, ", ")
	}
	return []results.Check{{Part: Name, Label: results.AmbientLabel, Text: text}}
}

// AddDetails implements part.Detailer.
func (o *opened) AddDetails(d map[string]any) {
	d["ambient"] = map[string]any{"proxies": o.m.Names(), "proof": o.check, "pinned": o.pinned}
}

// Close stops the proxies and removes their rules, routes and files.
func (o *opened) Close() error {
	if o.m == nil {
		return nil
	}
	unregister(o.lab.Prefix)
	err := o.m.Close()
	o.m = nil
	return err
}

// Unsupported implements part.Limiter: a same-node ClusterIP is sent into
// the tunnel as the pod dialled it (the outbound proxy cannot know its
// endpoint is local) and arrives in TLS at a local pod that speaks plain.
func (o *opened) Unsupported(placement string) error {
	if placement == suite.PodToServiceSameNode {
		return fmt.Errorf("%s: the ambient mesh's proxy tunnels a ClusterIP before the Service datapath picks a same-node endpoint, which gets TLS it does not speak: %w", placement, suite.ErrUnsupported)
	}
	return nil
}

// StartUsage implements part.Meter: the proxies' CPU so far.
func (o *opened) StartUsage(context.Context) (any, error) { return o.m.CPU() }

// EndUsage implements part.Meter: each proxy's CPU since mark and its
// memory now.
func (o *opened) EndUsage(_ context.Context, mark any, u *results.DatapathUsage) error {
	before, _ := mark.(map[string]time.Duration)
	now, err := o.m.CPU()
	if err != nil {
		return err
	}
	mem, err := o.m.Memory()
	if err != nil {
		return err
	}
	names := o.m.Names()
	slices.Sort(names)
	for _, name := range names {
		u.Components = append(u.Components, results.ComponentUsage{Plugin: "haproxy-ambient", Node: strings.TrimPrefix(name, "ztunnel-"), Pod: name,
			CPUSec: (now[name] - before[name]).Seconds(), MemoryBytes: mem[name]})
	}
	return nil
}
