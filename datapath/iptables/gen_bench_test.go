package iptables

import (
	"testing"

	"github.com/cnibench/cnibench/datapath"
)

func BenchmarkGenerate10k(b *testing.B) {
	spec := datapath.Spec{Services: datapath.DummyServices(10000, 4)}
	p := genParams{mark: masqMark, clusterCIDR: "198.19.0.0/16", addJumps: jumps}
	b.ReportAllocs()
	for b.Loop() {
		generate(&spec, p)
	}
}
