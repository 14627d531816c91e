package ambientpart

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cnibench/cnibench/engine/httpload"
	"github.com/cnibench/cnibench/lab"
	"github.com/cnibench/cnibench/lab/ambient"
	"github.com/cnibench/cnibench/lab/l7proxy"
	"github.com/cnibench/cnibench/results"
	"github.com/cnibench/cnibench/suite"
	"github.com/cnibench/cnibench/targets/labtarget/part"
)

// WaypointName is the waypoint part as --scenarios writes it.
const WaypointName = "waypoint"

func init() { part.One(waypoint{}) }

// waypoint is Istio ambient's L7 proxy of a namespace, added when L7
// policy is asked: the HTTP allow-list of the L7 parts (GET /), enforced
// by one HAProxy the node proxies reach in mTLS (lab/ambient).
type waypoint struct{}

func (waypoint) Name() string          { return WaypointName }
func (waypoint) Token() string         { return "wp" }
func (waypoint) Phase() part.Phase     { return part.L7 }
func (waypoint) Configure(*lab.Config) {}

// Conflicts: a waypoint is part of the ambient mesh, opened after it.
func (p waypoint) Conflicts(s part.Scenario) error {
	i := slices.IndexFunc(s.Parts, func(q part.Part) bool { return q.Name() == Name })
	j := slices.IndexFunc(s.Parts, func(q part.Part) bool { return q.Name() == WaypointName })
	switch {
	case i < 0:
		return fmt.Errorf("waypoint is the ambient mesh's L7 proxy: add ambient (e.g. iptables+ambient+waypoint)")
	case j < i:
		return fmt.Errorf("waypoint opens after the mesh: write ambient before it (iptables+ambient+waypoint)")
	}
	return nil
}

// Open starts the waypoint on the HTTP addresses the run dials and
// proves it (200 through it, 403 from it, its denied counter).
func (p waypoint) Open(ctx context.Context, env part.Env) (part.Opened, error) {
	l := env.Lab()
	mo := openMesh(l.Prefix)
	if mo == nil {
		return nil, fmt.Errorf("waypoint: no ambient mesh open on lab %s", l.Config.Name)
	}
	dests, err := waypointDests(env)
	if err != nil {
		return nil, err
	}
	env.Progress("starting the waypoint (HAProxy, L7 policy) for %d addresses ...", len(dests))
	start := time.Now()
	w, err := mo.m.StartWaypoint(ctx, ambient.WaypointSpec{Rules: l7proxy.BenchRules, Dests: dests})
	if err != nil {
		env.Progress(" %s\n", part.FailedOr(ctx))
		return nil, err
	}
	o := &waypointOpened{w: w}
	lines, err := w.Prove(ctx, mo.client, l7proxy.DefaultDeniedPath)
	if err != nil {
		env.Progress(" %s\n", part.FailedOr(ctx))
		return o, err
	}
	o.check = fmt.Sprintf("waypoint on %s, rules %s; %s", w.Proxy.Node, rulesText(), strings.Join(lines, "; "))
	env.Progress(" 200 allowed, 403 denied, in %s\n", time.Since(start).Round(time.Millisecond))
	return o, nil
}

// waypointDests are the HTTP addresses the run's placements dial: every
// pair's server pod's and the other-node ClusterIP (the same-node one is
// skipped by the mesh).
func waypointDests(env part.Env) ([]string, error) {
	l := env.Lab()
	var out []string
	add := func(ip string) {
		a := net.JoinHostPort(ip, strconv.Itoa(httpload.DefaultPort))
		if !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	for _, pl := range env.Placements() {
		if vip, ok := env.ServiceVIP(pl); ok {
			if pl != suite.PodToServiceSameNode {
				add(vip)
			}
			continue
		}
		for _, s := range env.PlacementServers(pl) {
			if e, err := l.Endpoint(s); err == nil && e.Kind == "pod" {
				add(e.IP)
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("waypoint: no placement of the run dials a pod or a ClusterIP over HTTP")
	}
	return out, nil
}

func rulesText() string {
	var s []string
	for _, r := range l7proxy.BenchRules {
		s = append(s, strings.TrimSpace(r.Method+" "+r.Path+r.PathPrefix))
	}
	return "allow " + strings.Join(s, ", ") + ", else 403"
}

// waypointOpened is the run's live waypoint.
type waypointOpened struct {
	w     *ambient.Waypoint
	check string
}

// Checks implements part.Opened.
func (o *waypointOpened) Checks() []results.Check {
	return []results.Check{{Part: WaypointName, Label: results.L7Label, Text: o.check}}
}

// Close stops the waypoint and removes its rules.
func (o *waypointOpened) Close() error {
	if o.w == nil {
		return nil
	}
	err := o.w.Close()
	o.w = nil
	return err
}

// StartUsage implements part.Meter: the waypoint's CPU so far.
func (o *waypointOpened) StartUsage(context.Context) (any, error) { return o.w.CPU() }

// EndUsage implements part.Meter: its CPU since mark and its memory now.
func (o *waypointOpened) EndUsage(_ context.Context, mark any, u *results.DatapathUsage) error {
	before, _ := mark.(time.Duration)
	now, err := o.w.CPU()
	if err != nil {
		return err
	}
	mem, err := o.w.Memory()
	if err != nil {
		return err
	}
	u.Components = append(u.Components, results.ComponentUsage{Plugin: "haproxy-waypoint", Node: o.w.Proxy.Node, Pod: "waypoint",
		CPUSec: (now - before).Seconds(), MemoryBytes: mem})
	return nil
}
