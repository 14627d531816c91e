package suite

import (
	"slices"
	"testing"

	"github.com/cnibench/cnibench/engine/fortioload"
	"github.com/cnibench/cnibench/results"
)

// The fortio kind's tests are in the catalogue, by name, after the HTTP
// kind's, and build their own options; the standard profile leaves them
// out (they measure the HTTP server again, with another client).
func TestFortioTestsInCatalogue(t *testing.T) {
	names := TestNames()
	fortio := []string{"FORTIO_RPS_C64", "FORTIO_RPS_SHORT_C64", "FORTIO_QPS_1000", "FORTIO_QPS_5000"}
	i := slices.Index(names, "HTTP_QPS_5000")
	if i < 0 || len(names) < i+1+len(fortio) || !slices.Equal(names[i+1:i+1+len(fortio)], fortio) {
		t.Fatalf("catalogue %v: want %v right after the HTTP tests", names, fortio)
	}
	std := StandardTestNames()
	for _, n := range fortio {
		if slices.Contains(std, n) {
			t.Errorf("standard profile runs %s", n)
		}
	}
	if len(std) != len(names)-len(fortio) || !slices.Contains(std, "HTTP_RPS_SHORT_C64") {
		t.Errorf("standard tests %v: want every test but fortio's", std)
	}
	p, err := Options{Tests: []string{"fortio_rps_short_c64"}, Placements: []string{PodToPodOtherNode, PodToServiceOtherNode}}.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	pl := results.Placement{Path: "pod-to-service", Node: "other-node", ServerAddr: "198.18.128.1"}
	o, ok := p.newResult(p.Specs[0], pl, "").Options.(*fortioload.Options)
	if !ok || o.Host != "198.18.128.1" || o.Port != fortioload.DefaultPort || o.KeepAlive || o.Connections != 64 || o.PortShare == nil {
		t.Errorf("FORTIO_RPS_SHORT_C64 options on pod-to-service: %+v", o)
	}
}
