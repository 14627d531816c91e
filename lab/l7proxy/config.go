package l7proxy

import (
	"fmt"
	"strings"

	"github.com/cnibench/cnibench/lab/haproxy"
)

// config is the HAProxy configuration of p under spec s.
//
// Choices, and why:
//   - nbthread 1: one thread per proxy, like one Envoy worker per sidecar
//     at small scale, and so that the proxy's CPU is one core at most on
//     a 2-core machine shared with client and server.
//   - keep-alive on both sides (HAProxy's default http-keep-alive mode,
//     not http-server-close) and "http-reuse always": idle upstream
//     connections are shared across downstream connections, as Envoy's
//     per-cluster connection pool. A short-connection client (one request
//     per connection) then still reuses pooled upstream connections, as
//     it would through Envoy.
//   - "server 0.0.0.0:0": forward to the connection's original
//     destination, read with SO_ORIGINAL_DST (the nat rule redirected it).
//   - the stats socket is abstract (abns@), so it lives in the proxy's
//     network namespace and leaves no file.
//   - logs: only alerts and warnings, to stderr (captured in a file):
//     no per-request logging, which would be a cost of its own.

func config(s Spec, p proxy, stats string) string {
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format+"\n", a...) }
	w("# cnibench l7proxy %s (%s model)", p.Name, s.Model)
	haproxy.Global(w, stats)
	if p.UID != 0 {
		w("    uid %d", p.UID)
		w("    gid %d", p.UID)
	}
	haproxy.Defaults(w, true)
	w("")
	w("frontend in")
	for _, b := range p.Binds {
		w("    bind %s", b)
	}
	w("    maxconn %d", haproxy.MaxConn)
	if p.Enforce {
		for _, r := range s.Rules {
			w("    http-request allow if%s", conditions(r))
		}
		w("    http-request deny deny_status 403")
	}
	w("    http-after-response add-header %s %s", HeaderProxy, p.Name)
	w("    default_backend original")
	w("")
	w("backend original")
	w("    server original 0.0.0.0:0")
	return b.String()
}

// conditions is r as HAProxy anonymous ACLs, ANDed.
func conditions(r HTTPRule) string {
	c := ""
	if r.Method != "" {
		c += " { method " + r.Method + " }"
	}
	if r.Path != "" {
		c += " { path " + r.Path + " }"
	}
	if r.PathPrefix != "" {
		c += " { path_beg " + r.PathPrefix + " }"
	}
	if c == "" {
		c = " TRUE"
	}
	return c
}
