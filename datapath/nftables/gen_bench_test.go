package nftables

import (
	"testing"

	"github.com/cnibench/cnibench/datapath"
	"sigs.k8s.io/knftables"
)

// BenchmarkTransaction10k measures what Program counts as Generate for the
// full sync of 10,000 Services × 4 endpoints: the spec check, the
// transaction and its nft text (our own cost, without nft).
func BenchmarkTransaction10k(b *testing.B) {
	spec := datapath.Spec{Services: datapath.DummyServices(10000, 4)}
	for _, lay := range layouts {
		b.Run(lay.name, func(b *testing.B) {
			d := &Datapath{opts: lay.opts, nft: knftables.NewFake(knftables.IPv4Family, table), prev: map[string]bool{}}
			b.ReportAllocs()
			for b.Loop() {
				if err := d.checkSpec(&spec); err != nil {
					b.Fatal(err)
				}
				d.render(&spec, true)
			}
		})
	}
}
