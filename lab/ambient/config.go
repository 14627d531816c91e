package ambient

import (
	"fmt"
	"strings"

	"github.com/cnibench/cnibench/lab/haproxy"
)

// files are where a node's proxy finds its things.
type files struct {
	CA    string // the run's CA certificate
	Cert  string // the node's certificate and key
	Stats string // abstract stats socket name (in the node's namespace)
}

// config is the HAProxy configuration of node n's proxy.
//
// Choices, and why:
//   - mode tcp: ztunnel is an L4 proxy; nothing of HTTP is parsed.
//   - nbthread 1: one thread per proxy, as l7proxy, so its CPU is one core
//     at most on a small machine shared with client and server.
//   - "server 0.0.0.0:0": forward to the connection's original
//     destination (SO_ORIGINAL_DST, the nat rule redirected it).
//   - outbound: to the node's own pods plain (no network to cross);
//     anything else (other nodes' pods, ClusterIPs) in TLS, verifying the
//     peer's certificate against the run's CA and presenting the node's.
//   - inbound: a port per pod of the node (why: rules); TLS only, "verify required": a peer without a certificate
//     of the run's CA is refused, so plaintext from another node fails
//     instead of passing (Istio's STRICT mTLS).
//   - TLS 1.3 only, as ztunnel negotiates.
//   - the stats socket is abstract (abns@): per namespace, leaves no file.
//   - logs: alerts and warnings only, to stderr (captured in a file).
//   - with a waypoint node: a frontend whose connections go to the
//     waypoint in mTLS, the original destination in a PROXY header.
func config(s Spec, n Node, f files) string {
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format+"\n", a...) }
	w("# cnibench ambient proxy of %s (ztunnel's role)", n.Name)
	globalSection(w, f.Stats)
	haproxy.Defaults(w, false)
	w("")
	w("frontend outbound")
	w("    bind %s:%d", n.IP, PortOutbound)
	w("    maxconn %d", haproxy.MaxConn)
	w("    use_backend local if { dst %s }", n.PodCIDR)
	w("    default_backend tunnel")
	w("")
	w("backend tunnel")
	w("    server tunnel 0.0.0.0:0 ssl verify required ca-file %s crt %s", f.CA, f.Cert)
	w("")
	w("backend local")
	w("    server local 0.0.0.0:0")
	w("")
	w("frontend inbound")
	for i := range n.Pods {
		w("    bind %s:%d ssl crt %s ca-file %s verify required", n.IP, PortInbound+i, f.Cert, f.CA)
	}
	w("    maxconn %d", haproxy.MaxConn)
	w("    default_backend deliver")
	w("")
	w("backend deliver")
	w("    server deliver 0.0.0.0:0")
	if wp, ok := s.node(s.Waypoint); ok {
		// The original destination rides to the waypoint in a PROXY v2
		// header, which HAProxy sends before the TLS handshake.
		w("")
		w("frontend to-waypoint")
		w("    bind %s:%d", n.IP, PortToWaypoint)
		w("    maxconn %d", haproxy.MaxConn)
		w("    default_backend waypoint")
		w("")
		w("backend waypoint")
		w("    server waypoint %s:%d ssl verify required ca-file %s crt %s send-proxy-v2", wp.IP, PortWaypoint, f.CA, f.Cert)
	}
	return b.String()
}

// globalSection is what every proxy of the mesh (node proxies and the
// waypoint) shares: one thread, the connection bound, warnings to stderr,
// its abstract stats socket, and TLS 1.3 only.
func globalSection(w haproxy.Writer, stats string) {
	haproxy.Global(w, stats)
	w("    ssl-default-bind-options ssl-min-ver TLSv1.3")
	w("    ssl-default-server-options ssl-min-ver TLSv1.3")
}
