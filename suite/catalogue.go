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
	"github.com/cnibench/cnibench/engine/kinds"
	"github.com/cnibench/cnibench/results"
)

// TestSpec is one named test of the suite: its engine kind (package
// kinds, where each engine registers its tests) with its settings.
type TestSpec struct {
	Name string
	// Kind is the registered kind ("stream", "rr", "http", "dns"): it
	// decides the test's engine, metrics and report table.
	Kind   string
	Engine engine.Test // stream and rr kinds: which engine test
	Multi  bool        // runs Plan.Streams flows instead of one
	// HTTP is the http kind's client template (connections, keep-alive,
	// QPS); the plan fills in host, duration and warmup.
	HTTP *httpload.Options
	// DNS is the dns kind's client template (rate, outstanding queries).
	DNS   *dnsload.Options
	About string
	// Template is the kind's own template (kinds.Test.Template), which a
	// kind that runs through the registry builds its options from.
	Template any
}

// IsHTTP tells whether the test runs the HTTP engine.
func (t TestSpec) IsHTTP() bool { return t.Kind == results.KindHTTP }

// IsDNS tells whether the test runs the DNS engine.
func (t TestSpec) IsDNS() bool { return t.Kind == results.KindDNS }

// Catalogue lists every suite test, in the order reports show them: the
// tests the engine kinds register. Names follow cilium connectivity perf
// (netperf's names, *_MULTI for N flows).
var Catalogue = catalogue()

func catalogue() []TestSpec {
	var out []TestSpec
	for _, t := range kinds.Tests() {
		spec := TestSpec{Name: t.Name, Kind: t.Kind, Multi: t.Multi, About: t.About, Template: t.Template}
		switch v := t.Template.(type) {
		case engine.Test:
			spec.Engine = v
		case *httpload.Options:
			spec.HTTP = v
		case *dnsload.Options:
			spec.DNS = v
		}
		out = append(out, spec)
	}
	return out
}

// LookupTest finds a test by name, case-insensitively, among the tests
// registered now (a kind registered after init, as in tests, included).
func LookupTest(name string) (TestSpec, error) {
	for _, t := range catalogue() {
		if strings.EqualFold(t.Name, strings.TrimSpace(name)) {
			return t, nil
		}
	}
	return TestSpec{}, fmt.Errorf("unknown test %q (known: %s)", name, strings.Join(TestNames(), ", "))
}

// TestNames lists the catalogue's names.
func TestNames() []string {
	var n []string
	for _, t := range catalogue() {
		n = append(n, t.Name)
	}
	return n
}

// StandardTestNames are the catalogue's tests but those of a kind that
// is a second client of another kind's server (fortio's of the HTTP
// server): the standard profile measures every server once, with its
// own kind's client; the others are asked for by name.
func StandardTestNames() []string {
	var n []string
	for _, t := range catalogue() {
		if k, ok := kinds.Lookup(t.Kind); ok && k.Dials != "" {
			continue
		}
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
