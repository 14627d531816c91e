package ambient

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"

	"github.com/cnibench/cnibench/lab/haproxy"
)

// proxy is a started HAProxy of the mesh: a node's, or the waypoint.
type proxy struct {
	Name  string `json:"name"` // "ztunnel-node0", "waypoint"
	Node  string `json:"node"` // the node it runs in
	Netns string `json:"netns"`
	haproxy.Proc
}

// startProxy starts HAProxy with cfg in node n's namespace, in its own
// cgroup (<parent>/amb-<name>) and on its node's CPUs when given, and
// waits until parse reads its stats socket: what the config has answers.
func startProxy[T any](ctx context.Context, name string, n Node, cfg, stats, base string, opts Options, parse func(io.Reader) (T, error)) (*proxy, error) {
	l := haproxy.Launch{Name: name, Netns: n.Netns, Config: cfg, Base: base, Stats: stats}
	if opts.CgroupParent != "" {
		l.Cgroup = filepath.Join(opts.CgroupParent, "amb-"+name)
	}
	if opts.CPUsOf != nil {
		l.CPUs = opts.CPUsOf(n.Name)
	}
	l.Ready = func(p *haproxy.Proc) error { _, err := haproxy.ShowStat(n.Netns, p, parse); return err }
	proc, err := haproxy.Start(ctx, l)
	return &proxy{Name: name, Node: n.Name, Netns: n.Netns, Proc: *proc}, err
}

// Counters are a node proxy's cumulative connection counts (HAProxy's
// stot, sessions since start).
type Counters struct {
	Outbound uint64 `json:"outbound"` // connections its node's pods opened through it
	Tunnels  uint64 `json:"tunnels"`  // of those, carried in TLS to another node
	Inbound  uint64 `json:"inbound"`  // mTLS connections it accepted from other nodes
}

// counters reads a node proxy's counters.
func (p *proxy) counters() (Counters, error) { return haproxy.ShowStat(p.Netns, &p.Proc, parseStat) }

// parseStat takes stot of the frontends "outbound" and "inbound" and of
// the backend "tunnel" from HAProxy's "show stat" CSV.
func parseStat(rd io.Reader) (Counters, error) {
	var c Counters
	var errs []error
	found := map[string]bool{}
	err := haproxy.StatRows(rd, func(cols map[string]int, f []string) {
		i, ok := cols["stot"]
		if !ok || len(f) <= i {
			return
		}
		var dst *uint64
		switch f[0] + "/" + f[1] {
		case "outbound/FRONTEND":
			dst = &c.Outbound
		case "inbound/FRONTEND":
			dst = &c.Inbound
		case "tunnel/BACKEND":
			dst = &c.Tunnels
		default:
			return
		}
		v, err := strconv.ParseUint(f[i], 10, 64)
		if err != nil {
			errs = append(errs, fmt.Errorf("ambient: show stat %s stot %q: %w", f[0], f[i], err))
		}
		*dst = v
		found[f[0]] = true
	})
	if err = errors.Join(append(errs, err)...); err != nil {
		return c, err
	}
	if len(found) != 3 {
		return c, errors.New("ambient: show stat lacks the outbound, inbound or tunnel row")
	}
	return c, nil
}
