package ebpf

import (
	"encoding/binary"
	"fmt"
	"net/netip"

	"github.com/cnibench/cnibench/datapath"
)

// Go mirrors of the map keys and values in bpf/lb.h. Addresses and ports
// are byte arrays in network order, exactly as the kernel stores them;
// counters are native-endian, as cilium/ebpf marshals them. layout_test.go
// checks sizes and offsets against the objects' BTF.

// svcKey is struct svc_key.
type svcKey struct {
	Addr  [4]byte
	Port  [2]byte
	Proto uint8
	Pad   uint8
}

// svcVal is struct svc_val.
type svcVal struct {
	Base  uint32
	Count uint16
	Pad   uint16
	Rev   uint32
}

// backendVal is struct backend.
type backendVal struct {
	Addr [4]byte
	Port [2]byte
	Pad  uint16
}

const (
	ipprotoTCP = 6
	ipprotoUDP = 17
)

func (k svcKey) String() string {
	proto := "TCP"
	if k.Proto == ipprotoUDP {
		proto = "UDP"
	}
	return fmt.Sprintf("%s:%d/%s", netip.AddrFrom4(k.Addr), binary.BigEndian.Uint16(k.Port[:]), proto)
}

func (b backendVal) String() string {
	return netip.AddrPortFrom(netip.AddrFrom4(b.Addr), binary.BigEndian.Uint16(b.Port[:])).String()
}

func be16(v uint16) (p [2]byte) {
	binary.BigEndian.PutUint16(p[:], v)
	return p
}

// service is one Service port of a Spec, as the maps hold it. Its
// endpoints are table.ends[first : first+n].
type service struct {
	key      svcKey
	rev      uint32
	first, n uint32
	base     uint32 // first backend slot, assigned by the allocator
}

func (s *service) val() svcVal {
	return svcVal{Base: s.base, Count: uint16(s.n), Rev: s.rev}
}

// table is a Spec turned into map entries, in Spec order. It is built on
// every Program (30,000 Services take a few milliseconds), so it holds few
// pointers: the GC has little to scan and the map is pointer-free.
type table struct {
	spec  []datapath.Service // the Spec's Services, for names in messages
	svcs  []service          // same order
	ends  []backendVal       // every endpoint, Service after Service
	byKey map[svcKey]int32
}

// endsOf returns s's endpoints.
func (t *table) endsOf(s *service) []backendVal { return t.ends[s.first : s.first+s.n] }

// label names t.svcs[i] in messages: "service default/svc-17:80/tcp
// (198.18.128.17:80/TCP)".
func (t *table) label(i int) string {
	return fmt.Sprintf("service %s (%s)", t.spec[i].Key(), t.svcs[i].key)
}

// lookup returns the Service with key k, or nil.
func (t *table) lookup(k svcKey) *service {
	if i, ok := t.byKey[k]; ok {
		return &t.svcs[i]
	}
	return nil
}

// lookupFirst returns the index of the first of t.svcs[:upto] with key k.
func (t *table) lookupFirst(k svcKey, upto int) int {
	for i := range upto {
		if t.svcs[i].key == k {
			return i
		}
	}
	return upto
}

// maxEndpoints is the most endpoints one Service may have (svc_val.count).
const maxEndpoints = 1<<16 - 1

// buildTable validates spec and converts it. Errors name the Service.
func buildTable(spec datapath.Spec) (*table, error) { return buildTableReusing(spec, nil) }

// buildTableReusing is buildTable writing into old's memory when it is
// large enough (Program keeps the table it replaced for this: a sweep's
// steps then allocate, zero and page in nothing new).
func buildTableReusing(spec datapath.Spec, old *table) (*table, error) {
	total := 0
	for _, s := range spec.Services {
		total += len(s.Endpoints)
	}
	t := &table{spec: spec.Services}
	if old != nil && cap(old.svcs) >= len(spec.Services) && cap(old.ends) >= total {
		t.svcs, t.ends, t.byKey = old.svcs[:len(spec.Services)], old.ends[:total], old.byKey
		clear(t.byKey)
	} else {
		t.svcs = make([]service, len(spec.Services))
		t.ends = make([]backendVal, total)
		t.byKey = make(map[svcKey]int32, len(spec.Services))
	}
	next := uint32(0)
	for i := range spec.Services {
		s := &spec.Services[i]
		if !s.VIP.Is4() {
			return nil, fmt.Errorf("ebpf: service %s: VIP %v is not IPv4", s.Key(), s.VIP)
		}
		var proto uint8
		switch s.Protocol {
		case datapath.TCP:
			proto = ipprotoTCP
		case datapath.UDP:
			proto = ipprotoUDP
		default:
			return nil, fmt.Errorf("ebpf: service %s: protocol %q is not TCP or UDP", s.Key(), s.Protocol)
		}
		if s.Port == 0 {
			return nil, fmt.Errorf("ebpf: service %s: port 0", s.Key())
		}
		if len(s.Endpoints) > maxEndpoints {
			return nil, fmt.Errorf("ebpf: service %s: %d endpoints, at most %d", s.Key(), len(s.Endpoints), maxEndpoints)
		}
		sv := &t.svcs[i]
		*sv = service{}
		sv.key = svcKey{Addr: s.VIP.As4(), Port: be16(s.Port), Proto: proto}
		sv.first, sv.n = next, uint32(len(s.Endpoints))
		h := uint32(fnvOffset)
		for j, ep := range s.Endpoints {
			if !ep.IP.Is4() || ep.Port == 0 {
				return nil, fmt.Errorf("ebpf: service %s: endpoint %d (%v:%d) is not an IPv4 address with a port", s.Key(), j, ep.IP, ep.Port)
			}
			b := backendVal{Addr: ep.IP.As4(), Port: be16(ep.Port)}
			t.ends[next] = b
			next++
			for _, c := range [6]byte{b.Addr[0], b.Addr[1], b.Addr[2], b.Addr[3], b.Port[0], b.Port[1]} {
				h = (h ^ uint32(c)) * fnvPrime
			}
		}
		sv.rev = h
		// One map operation: a duplicate key does not grow the map.
		before := len(t.byKey)
		t.byKey[sv.key] = int32(i)
		if len(t.byKey) == before {
			prev := t.lookupFirst(sv.key, i)
			return nil, fmt.Errorf("ebpf: services %s and %s (entry %d) have the same VIP, port and protocol %s", spec.Services[prev].Key(), s.Key(), i, sv.key)
		}
	}
	return t, nil
}

// sameEnds reports whether s of t and o of old list the same endpoints in
// the same order.
func sameEnds(t *table, s *service, old *table, o *service) bool {
	if s.n != o.n || s.rev != o.rev {
		return false
	}
	a, b := t.endsOf(s), old.endsOf(o)
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// FNV-1a (32 bit) of the endpoint list: svc_val.rev.
const (
	fnvOffset = 2166136261
	fnvPrime  = 16777619
)
