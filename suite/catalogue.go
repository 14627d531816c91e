// Package suite turns a profile and flags into a plan (which tests on which
// placements, how long, how many rounds), runs it on a Target through the
// agents, and writes every sample to the results document as it finishes.
package suite

import (
	"fmt"
	"sort"
	"strings"

	"github.com/cnibench/cnibench/engine"
	"github.com/cnibench/cnibench/engine/dnsload"
	"github.com/cnibench/cnibench/engine/httpload"
)

// Kinds of test: which engine runs it.
const (
	KindEngine = "engine" // engine.Run: stream, RR and CRR tests
	KindHTTP   = "http"   // httpload.Run against the agent's HTTP server
	KindDNS    = "dns"    // dnsload.Run against the server agent's dnsmasq
)

// TestSpec is one named test of the suite: an engine with its settings.
type TestSpec struct {
	Name   string
	Kind   string      // KindEngine ("" means the same) or KindHTTP
	Engine engine.Test // KindEngine: which engine test
	Multi  bool        // KindEngine: runs Plan.Streams flows instead of one
	// HTTP is the KindHTTP client template (connections, keep-alive, QPS);
	// the plan fills in host, duration and warmup.
	HTTP *httpload.Options
	// DNS is the KindDNS client template (rate, outstanding queries).
	DNS   *dnsload.Options
	About string
}

// IsHTTP tells whether the test runs the HTTP engine.
func (t TestSpec) IsHTTP() bool { return t.Kind == KindHTTP }

// IsDNS tells whether the test runs the DNS engine.
func (t TestSpec) IsDNS() bool { return t.Kind == KindDNS }

// Catalogue lists every suite test, in the order reports show them. Names
// follow cilium connectivity perf (netperf's names, *_MULTI for N flows).
var Catalogue = []TestSpec{
	{Name: "TCP_STREAM", Engine: engine.TCPStream, About: "TCP throughput, 1 stream (receiver's goodput)"},
	{Name: "TCP_STREAM_MULTI", Engine: engine.TCPStream, Multi: true, About: "TCP throughput, N streams"},
	{Name: "UDP_STREAM", Engine: engine.UDPStream, About: "UDP delivered goodput and loss, 1 flow"},
	{Name: "UDP_STREAM_MULTI", Engine: engine.UDPStream, Multi: true, About: "UDP delivered goodput and loss, N flows"},
	{Name: "TCP_RR", Engine: engine.TCPRR, About: "TCP request/response rate and latency"},
	{Name: "UDP_RR", Engine: engine.UDPRR, About: "UDP request/response rate and latency"},
	{Name: "TCP_CRR", Engine: engine.TCPCRR, About: "new TCP connection per request: rate and latency"},
	// HTTP, as the TKE and EKS reports measure it: max RPS over keep-alive
	// connections (c64, c256) and with a new connection per request, and
	// latency at fixed rates (open loop, corrected for coordinated
	// omission). HTTP_QPS_1000, HTTP_QPS_5000 and HTTP_RPS_C64 (max) make
	// the QPS ladder.
	{Name: "HTTP_RPS_C64", Kind: KindHTTP, HTTP: &httpload.Options{Connections: 64, KeepAlive: true}, About: "HTTP requests/s at max rate, 64 keep-alive connections"},
	{Name: "HTTP_RPS_C256", Kind: KindHTTP, HTTP: &httpload.Options{Connections: 256, KeepAlive: true}, About: "HTTP requests/s at max rate, 256 keep-alive connections"},
	{Name: "HTTP_RPS_SHORT_C64", Kind: KindHTTP, HTTP: &httpload.Options{Connections: 64}, About: "HTTP requests/s, a new connection per request, 64 concurrent"},
	{Name: "HTTP_QPS_1000", Kind: KindHTTP, HTTP: &httpload.Options{Connections: 64, KeepAlive: true, QPS: 1000}, About: "HTTP latency at a fixed 1,000 requests/s (open loop, CO corrected)"},
	{Name: "HTTP_QPS_5000", Kind: KindHTTP, HTTP: &httpload.Options{Connections: 64, KeepAlive: true, QPS: 5000}, About: "HTTP latency at a fixed 5,000 requests/s (open loop, CO corrected)"},
	// DNS against dnsmasq in the server pod, 1,000 Service-like names:
	// capacity (closed loop, 100 queries in flight) and latency at a fixed
	// 1,000 queries/s (open loop, CO corrected).
	{Name: "DNS_QPS_MAX", Kind: KindDNS, DNS: &dnsload.Options{}, About: "DNS queries/s a dnsmasq server answers (closed loop, 100 in flight)"},
	{Name: "DNS_QPS_1000", Kind: KindDNS, DNS: &dnsload.Options{QPS: 1000}, About: "DNS latency at a fixed 1,000 queries/s (open loop, CO corrected)"},
}

// LookupTest finds a test by name, case-insensitively.
func LookupTest(name string) (TestSpec, error) {
	for _, t := range Catalogue {
		if strings.EqualFold(t.Name, strings.TrimSpace(name)) {
			return t, nil
		}
	}
	return TestSpec{}, fmt.Errorf("unknown test %q (known: %s)", name, strings.Join(TestNames(), ", "))
}

// TestNames lists the catalogue's names.
func TestNames() []string {
	var n []string
	for _, t := range Catalogue {
		n = append(n, t.Name)
	}
	return n
}

// Placement names, as in cilium connectivity perf: path/node.
const (
	PodToPodSameNode   = "pod-to-pod/same-node"
	PodToPodOtherNode  = "pod-to-pod/other-node"
	HostToHostOtherNod = "host-to-host/other-node"
	// PodToServiceSameNode and PodToServiceOtherNode dial a ClusterIP
	// whose endpoints are pods on the client's node or on another node;
	// they need a target with a Service datapath. Same-node is what a
	// one-node cluster (kind, minikube, CI) can run.
	PodToServiceSameNode  = "pod-to-service/same-node"
	PodToServiceOtherNode = "pod-to-service/other-node"
)

// AllPlacements lists the placements the suite knows, in report order.
var AllPlacements = []string{PodToPodSameNode, PodToPodOtherNode, HostToHostOtherNod}

// ServicePlacements are added to a profile's placements when the target
// has a Service datapath.
var ServicePlacements = []string{PodToServiceSameNode, PodToServiceOtherNode}

// IsServicePlacement tells whether the client of a placement dials a
// Service's ClusterIP.
func IsServicePlacement(p string) bool { return strings.HasPrefix(p, "pod-to-service/") }

// LookupPlacement validates a placement name.
func LookupPlacement(name string) (string, error) {
	n := strings.ToLower(strings.TrimSpace(name))
	for _, p := range append(AllPlacements, ServicePlacements...) {
		if p == n {
			return p, nil
		}
	}
	known := append(append([]string(nil), AllPlacements...), ServicePlacements...)
	sort.Strings(known)
	return "", fmt.Errorf("unknown placement %q (known: %s)", name, strings.Join(known, ", "))
}
