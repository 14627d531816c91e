package l7proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"

	"github.com/cnibench/cnibench/lab/haproxy"
)

// running is a started proxy.
type running struct {
	proxy
	haproxy.Proc
}

// startProxy starts p's HAProxy in p's namespace, in its own cgroup under
// opts.CgroupParent if given, pinned to its CPUs (Options.cpus) if given,
// and waits until its stats socket answers.
func startProxy(ctx context.Context, s Spec, p proxy, opts Options) (*running, error) {
	stats := opts.Prefix + "l7-" + p.Name
	l := haproxy.Launch{Name: p.Name, Netns: p.Netns, Config: config(s, p, stats), Stats: stats,
		Base: filepath.Join(opts.StateDir, stats), CPUs: opts.cpus(p.Name)}
	if opts.CgroupParent != "" {
		l.Cgroup = filepath.Join(opts.CgroupParent, "l7-"+p.Name)
	}
	r := &running{proxy: p}
	l.Ready = func(p *haproxy.Proc) error { _, err := haproxy.ShowStat(r.Netns, p, parseStat); return err }
	proc, err := haproxy.Start(ctx, l)
	r.Proc = *proc
	return r, err
}

// Counters are a proxy's counters, from its stats socket.
type Counters struct {
	Requests uint64 `json:"requests"` // HTTP requests received (frontend req_tot)
	Denied   uint64 `json:"denied"`   // requests denied by the rules (frontend dreq)
	// Connects and Reuses are upstream connections opened and requests
	// sent on an idle pooled one (server connect, reuse): the pool at work.
	Connects uint64 `json:"connects"`
	Reuses   uint64 `json:"reuses"`
}

// stats reads the counters with "show stat" on the proxy's socket.
func (r *running) stats() (Counters, error) { return haproxy.ShowStat(r.Netns, &r.Proc, parseStat) }

// parseStat reads HAProxy's "show stat" CSV: the counters of frontend
// "in" and of server "original" of backend "original".
func parseStat(rd io.Reader) (Counters, error) {
	var c Counters
	var errs []error
	rows := 0
	err := haproxy.StatRows(rd, func(cols map[string]int, f []string) {
		get := func(n string) uint64 {
			i, ok := cols[n]
			if !ok || i >= len(f) {
				errs = append(errs, fmt.Errorf("l7proxy: show stat has no %s column", n))
				return 0
			}
			v, err := strconv.ParseUint(f[i], 10, 64)
			if err != nil && f[i] != "" {
				errs = append(errs, fmt.Errorf("l7proxy: show stat %s %q: %w", n, f[i], err))
			}
			return v
		}
		switch {
		case f[0] == "in" && f[1] == "FRONTEND":
			c.Requests, c.Denied = get("req_tot"), get("dreq")
			rows++
		case f[0] == "original" && f[1] == "original":
			c.Connects, c.Reuses = get("connect"), get("reuse")
			rows++
		}
	})
	errs = append(errs, err)
	if rows != 2 {
		errs = append(errs, errors.New("l7proxy: show stat lacks the frontend \"in\" or the server \"original\" row"))
	}
	return c, errors.Join(errs...)
}
