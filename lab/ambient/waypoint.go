package ambient

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/cnibench/cnibench/internal/netnsx"
	"github.com/cnibench/cnibench/internal/nsexec"
	"github.com/cnibench/cnibench/lab/haproxy"
	"github.com/cnibench/cnibench/lab/l7proxy"
)

// waypointName names the waypoint's proxy, certificate and files.
const waypointName = "waypoint"

// WaypointSpec is the L7 policy of a namespace's waypoint: Istio adds one
// per namespace when L7 policy is asked; the lab's pods are one
// namespace, so a run has one.
type WaypointSpec struct {
	Rules []l7proxy.HTTPRule `json:"rules"` // the allow-list; everything else gets 403
	// Dests are the "ip:port" the waypoint serves (server pods' HTTP
	// port, ClusterIPs): the pods' connections to them go to it.
	Dests []string `json:"dests"`
}

// Validate says, in one line, what is wrong with s.
func (s WaypointSpec) Validate() error {
	if len(s.Rules) == 0 {
		return errors.New("ambient: waypoint without rules: everything would be denied")
	}
	if len(s.Dests) == 0 {
		return errors.New("ambient: waypoint without destinations")
	}
	for _, d := range s.Dests {
		if ap, err := netip.ParseAddrPort(d); err != nil || !ap.Addr().Is4() {
			return fmt.Errorf("ambient: waypoint destination %q is not IPv4 ip:port", d)
		}
	}
	return nil
}

// Waypoint is a started waypoint: its proxy and the capture rules that
// send the pods' connections to its destinations through it.
type Waypoint struct {
	Spec  WaypointSpec `json:"spec"`
	Proxy *proxy       `json:"proxy"`
	Rules []natRule    `json:"rules"`
	mesh  *Mesh
}

// waypointTag is the comment on the waypoint's rules.
func waypointTag(prefix string) string { return prefix + "ambient-waypoint" }

// StartWaypoint starts the waypoint in the mesh's waypoint node, then
// adds, in every node, a rule sending its pods' TCP to ws.Dests to their
// node proxy's waypoint port, from where it goes in mTLS to the waypoint.
// The waypoint enforces the rules (403 otherwise, HTTP keep-alive and
// pooled upstream connections as l7proxy's) and dials the original
// destination: a pod of its node or a ClusterIP plain (a ClusterIP's
// endpoints must be on the waypoint's node), any other pod through that
// pod's node proxy in mTLS. Close the waypoint before the mesh.
func (m *Mesh) StartWaypoint(ctx context.Context, ws WaypointSpec) (*Waypoint, error) {
	if err := ws.Validate(); err != nil {
		return nil, err
	}
	for _, r := range ws.Rules {
		if err := l7proxy.ValidateRule(r); err != nil {
			return nil, fmt.Errorf("ambient: waypoint rule: %w", err)
		}
	}
	wpNode, ok := m.Spec.node(m.Spec.Waypoint)
	if !ok {
		return nil, errors.New("ambient: the mesh was started without a waypoint node")
	}
	o := m.Opts
	base := filePrefix(o.StateDir, o.Prefix)
	f := files{CA: base + "ca.pem", Cert: base + waypointName + ".pem", Stats: o.Prefix + "amb-" + waypointName}
	w := &Waypoint{Spec: ws, mesh: m}
	p, err := startProxy(ctx, waypointName, wpNode, waypointConfig(m.Spec, wpNode, ws, f), f.Stats, base+waypointName, o, parseWaypointStat)
	if p != nil {
		w.Proxy = p
	}
	if err != nil {
		return nil, errors.Join(err, w.Close())
	}
	w.Rules = waypointRules(m.Spec, ws)
	for _, r := range w.Rules {
		if _, err := nsexec.Run(ctx, r.Netns, nil, "iptables", r.insertArgs(waypointTag(o.Prefix))...); err != nil {
			return nil, errors.Join(fmt.Errorf("ambient: waypoint rule in %s: %w", r.Netns, err), w.Close())
		}
	}
	return w, nil
}

// waypointRules send each node's pods' TCP to the waypoint's
// destinations to the node proxy's waypoint port (inserted above the
// mesh's own rules).
func waypointRules(s Spec, ws WaypointSpec) []natRule {
	var out []natRule
	for _, n := range s.Nodes {
		for _, d := range ws.Dests {
			ap := netip.MustParseAddrPort(d)
			out = append(out, natRule{Netns: n.Netns, Chain: "PREROUTING", Args: []string{
				"-p", "tcp", "-s", n.PodCIDR, "-d", ap.Addr().String() + "/32", "--dport", strconv.Itoa(int(ap.Port())),
				"-j", "DNAT", "--to-destination", n.IP + ":" + strconv.Itoa(PortToWaypoint)}})
		}
	}
	return out
}

// waypointConfig is the waypoint's HAProxy configuration: l7proxy's HTTP
// choices (keep-alive, "http-reuse always", the rules, the header naming
// the proxy) behind an mTLS port that takes the original destination from
// the node proxies' PROXY header.
func waypointConfig(s Spec, wp Node, ws WaypointSpec, f files) string {
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format+"\n", a...) }
	w("# cnibench ambient waypoint on %s (one per namespace, L7 policy)", wp.Name)
	globalSection(w, f.Stats)
	haproxy.Defaults(w, true)
	w("")
	w("frontend in")
	w("    bind %s:%d ssl crt %s ca-file %s verify required accept-proxy", wp.IP, PortWaypoint, f.Cert, f.CA)
	w("    maxconn %d", haproxy.MaxConn)
	for _, r := range ws.Rules {
		w("    http-request allow if%s", l7proxy.RuleACL(r))
	}
	w("    http-request deny deny_status 403")
	w("    http-after-response add-header %s %s", l7proxy.HeaderProxy, waypointName)
	w("    use_backend local if { dst %s %s }", wp.PodCIDR, s.ServiceCIDR)
	w("    default_backend tunnel")
	w("")
	w("backend tunnel")
	w("    server tunnel 0.0.0.0:0 ssl verify required ca-file %s crt %s", f.CA, f.Cert)
	w("")
	w("backend local")
	w("    server local 0.0.0.0:0")
	return b.String()
}

// WaypointCounters are the waypoint's HTTP counters.
type WaypointCounters struct {
	Requests uint64 `json:"requests"` // frontend req_tot
	Denied   uint64 `json:"denied"`   // frontend dreq
}

// Counters reads the waypoint's counters.
func (w *Waypoint) Counters() (WaypointCounters, error) {
	return haproxy.ShowStat(w.Proxy.Netns, &w.Proxy.Proc, parseWaypointStat)
}

// parseWaypointStat takes req_tot and dreq of frontend "in".
func parseWaypointStat(rd io.Reader) (WaypointCounters, error) {
	var c WaypointCounters
	var errs []error
	found := false
	err := haproxy.StatRows(rd, func(cols map[string]int, f []string) {
		if found || f[0] != "in" || f[1] != "FRONTEND" {
			return
		}
		found = true
		ri, ok1 := cols["req_tot"]
		di, ok2 := cols["dreq"]
		if !ok1 || !ok2 || ri >= len(f) || di >= len(f) {
			errs = append(errs, errors.New("ambient: show stat has no req_tot or dreq"))
			return
		}
		r, err1 := strconv.ParseUint(f[ri], 10, 64)
		d, err2 := strconv.ParseUint(f[di], 10, 64)
		if err := errors.Join(err1, err2); err != nil {
			errs = append(errs, fmt.Errorf("ambient: waypoint show stat: %w", err))
		}
		c = WaypointCounters{Requests: r, Denied: d}
	})
	if !found {
		errs = append(errs, errors.New("ambient: show stat lacks the frontend \"in\""))
	}
	if err := errors.Join(append(errs, err)...); err != nil {
		return WaypointCounters{}, err
	}
	return c, nil
}

// Prove checks the waypoint on every destination from pod from: GET /
// gets 200 through the waypoint, GET of the denied path 403 from it, and
// its denied counter rose. It returns one line per destination.
func (w *Waypoint) Prove(ctx context.Context, from Pod, deniedPath string) ([]string, error) {
	var out []string
	for _, d := range w.Spec.Dests {
		before, err := w.Counters()
		if err != nil {
			return nil, err
		}
		st, via, err := httpGet(ctx, from, d, "/")
		if err != nil || st != http.StatusOK || via != waypointName {
			return nil, fmt.Errorf("ambient: GET http://%s/ from %s: %d through %q (%v), want 200 through the waypoint", d, from.Name, st, via, err)
		}
		dst, dvia, err := httpGet(ctx, from, d, deniedPath)
		if err != nil || dst != http.StatusForbidden || dvia != waypointName {
			return nil, fmt.Errorf("ambient: GET http://%s%s from %s: %d through %q (%v), want 403 from the waypoint", d, deniedPath, from.Name, dst, dvia, err)
		}
		after, err := w.Counters()
		if err != nil {
			return nil, err
		}
		if after.Denied <= before.Denied || after.Requests < before.Requests+2 {
			return nil, fmt.Errorf("ambient: the waypoint answered %s but counted %+v → %+v", d, before, after)
		}
		out = append(out, fmt.Sprintf("%s: GET / 200 through the waypoint; GET %s 403 from it", d, deniedPath))
	}
	return out, nil
}

// httpGet sends one request from pod p on a new connection and returns
// the status and the proxy header's value.
func httpGet(ctx context.Context, p Pod, addr, path string) (int, string, error) {
	tr := &http.Transport{DisableKeepAlives: true, DialContext: func(ctx context.Context, network, a string) (net.Conn, error) {
		var c net.Conn
		err := netnsx.Do(p.Netns, func() (err error) {
			c, err = (&net.Dialer{Timeout: 3 * time.Second}).DialContext(ctx, "tcp4", a)
			return err
		})
		return c, err
	}}
	defer tr.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", "http://"+addr+path, nil)
	if err != nil {
		return 0, "", err
	}
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return 0, "", err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, strings.Join(resp.Header.Values(l7proxy.HeaderProxy), ","), nil
}

// CPU is the waypoint's CPU time so far.
func (w *Waypoint) CPU() (time.Duration, error) { return w.Proxy.CPU() }

// Memory is what the waypoint holds now, in bytes.
func (w *Waypoint) Memory() (uint64, error) { return w.Proxy.Memory() }

// Close removes the waypoint's rules, stops it, removes its cgroup and
// files (the certificate stays the mesh's). Idempotent.
func (w *Waypoint) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var errs []error
	for _, n := range w.mesh.Spec.Nodes {
		if _, err := os.Stat(n.Netns); err == nil {
			errs = append(errs, l7proxy.RemoveTaggedNat(ctx, n.Netns, waypointTag(w.mesh.Opts.Prefix)))
		}
	}
	if w.Proxy != nil {
		errs = append(errs, w.Proxy.Stop())
		if w.Proxy.Cgroup != "" {
			errs = append(errs, haproxy.RemoveCgroup(w.Proxy.Cgroup))
		}
		for _, f := range []string{w.Proxy.Cfg, w.Proxy.Log} {
			if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}
