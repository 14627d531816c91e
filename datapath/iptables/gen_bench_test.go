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
		if _, err := generate(&spec, p); err != nil {
			b.Fatal(err)
		}
	}
}

// What Program counts as Generate: the spec check and the text.
func BenchmarkCheckAndGenerate10k(b *testing.B) {
	spec := datapath.Spec{Services: datapath.DummyServices(10000, 4)}
	p := genParams{mark: masqMark, clusterCIDR: "198.19.0.0/16", addJumps: jumps}
	b.ReportAllocs()
	for b.Loop() {
		if err := spec.Validate(); err != nil {
			b.Fatal(err)
		}
		if _, err := generate(&spec, p); err != nil {
			b.Fatal(err)
		}
	}
}
