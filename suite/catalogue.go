// Package suite turns a profile and flags into a plan (which tests on which
// placements, how long, how many rounds), runs it on a Target through the
// agents, and writes every sample to the results document as it finishes.
package suite

import (
	"fmt"
	"sort"
	"strings"

	"github.com/cnibench/cnibench/engine"
)

// TestSpec is one named test of the suite: an engine with a flow count.
type TestSpec struct {
	Name   string
	Engine engine.Test
	Multi  bool // runs Plan.Streams flows instead of one
	About  string
}

// Catalogue lists every suite test, in the order reports show them. Names
// follow cilium connectivity perf (netperf's names, *_MULTI for N flows).
var Catalogue = []TestSpec{
	{"TCP_STREAM", engine.TCPStream, false, "TCP throughput, 1 stream (receiver's goodput)"},
	{"TCP_STREAM_MULTI", engine.TCPStream, true, "TCP throughput, N streams"},
	{"UDP_STREAM", engine.UDPStream, false, "UDP delivered goodput and loss, 1 flow"},
	{"UDP_STREAM_MULTI", engine.UDPStream, true, "UDP delivered goodput and loss, N flows"},
	{"TCP_RR", engine.TCPRR, false, "TCP request/response rate and latency"},
	{"UDP_RR", engine.UDPRR, false, "UDP request/response rate and latency"},
	{"TCP_CRR", engine.TCPCRR, false, "new TCP connection per request: rate and latency"},
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
)

// AllPlacements lists the placements the suite knows, in report order.
var AllPlacements = []string{PodToPodSameNode, PodToPodOtherNode, HostToHostOtherNod}

// LookupPlacement validates a placement name.
func LookupPlacement(name string) (string, error) {
	n := strings.ToLower(strings.TrimSpace(name))
	for _, p := range AllPlacements {
		if p == n {
			return p, nil
		}
	}
	known := append([]string(nil), AllPlacements...)
	sort.Strings(known)
	return "", fmt.Errorf("unknown placement %q (known: %s)", name, strings.Join(known, ", "))
}
