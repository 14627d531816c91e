package ebpf

import (
	"net/netip"
	"testing"

	"github.com/cnibench/cnibench/datapath"
)

// TestProgramSequence programs a series of Specs that add, remove, reorder
// and change Services, full and incremental, and checks after each that
// the maps hold exactly that Spec (Verify compares every entry and counts
// leftovers). A small backend map forces the relayout path too.
func TestProgramSequence(t *testing.T) {
	for _, incremental := range []bool{false, true} {
		name := "full"
		if incremental {
			name = "incremental"
		}
		t.Run(name, func(t *testing.T) {
			s := newSocketLB(t, Options{LBMapMax: 64, Incremental: incremental})
			base := dummySpec(12, 4) // 48 of 64 slots
			steps := []struct {
				what string
				spec datapath.Spec
			}{
				{"initial", base},
				{"unchanged", base},
				{"remove three", datapath.Spec{Services: append(append([]datapath.Service{}, base.Services[:3]...), base.Services[6:]...)}},
				{"reversed", reversed(base)},
				{"change endpoints of one", withEndpoints(base, 5, 3)},
				// 11 Services of 4 + one of 16 = 60 slots: the grown Service
				// cannot get new slots before its old ones are freed.
				{"grow one past the free space", withEndpoints(datapath.Spec{Services: base.Services[:11]}, 2, 16)},
				{"empty Service", withEndpoints(base, 7, 0)},
				{"nothing", datapath.Spec{}},
				{"back", base},
			}
			for _, st := range steps {
				program(t, s, st.spec)
				t.Logf("after %q: next slot %d, free runs %v", st.what, s.alloc.next, s.alloc.free)
			}
		})
	}
}

func reversed(s datapath.Spec) datapath.Spec {
	out := datapath.Spec{Services: make([]datapath.Service, len(s.Services))}
	for i, sv := range s.Services {
		out.Services[len(s.Services)-1-i] = sv
	}
	return out
}

// withEndpoints returns a copy of s where Service i has n endpoints.
func withEndpoints(s datapath.Spec, i, n int) datapath.Spec {
	out := datapath.Spec{Services: append([]datapath.Service{}, s.Services...)}
	eps := make([]datapath.Endpoint, n)
	for j := range eps {
		eps[j] = datapath.Endpoint{IP: netip.AddrFrom4([4]byte{198, 19, 250, byte(j)}), Port: 9000}
	}
	out.Services[i].Endpoints = eps
	return out
}
