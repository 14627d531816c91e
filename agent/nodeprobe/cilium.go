package nodeprobe

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"

	"github.com/cilium/ebpf"
)

// Cilium's IPv4 load-balancing maps (bpf/lib/lb.h; Go side
// pkg/loadbalancer/maps), pinned by name in the tc globals directory of
// the BPF filesystem. Names and layouts checked in the sources of v1.20.2
// and v1.15.19: the same names, sizes and offsets of every field read
// here (1.15 had padding where 1.20 has qcount and zone), so 1.19, between
// them, is read alike; only lb4_key's proto is filled differently.
const (
	ciliumMapPrefix  = "cilium_"
	ciliumServiceMap = "cilium_lb4_services_v2"
	ciliumBackendMap = "cilium_lb4_backends_v3"
	ciliumPinDir     = "tc/globals"
)

// lb4_key: __be32 address, __be16 dport, __u16 backend_slot (host order;
// 0 is the frontend, 1.. its backend slots), __u8 proto (the L4 protocol:
// always since 1.19, whose --bpf-lb-proto-diff is gone; 0 "any" before),
// __u8 scope (0 external, 1 a two-scope Service's internal twin), pad[2].
//
// lb4_service: __u32 backend_id (a slot's backend; the frontend's holds
// affinity or L7 data), __u16 count (the frontend's slots new connections
// pick from: 1..count), __u16 rev_nat_index, __u8 flags, flags2,
// __u16 qcount (slots after count: quarantined, or terminating ones
// beside active ones).
//
// The backends map: __u32 backend ID → lb4_backend: __be32 address,
// __be16 port, __u8 proto, __u8 flags (BE_STATE_*), __u16 cluster_id,
// __u8 zone, __u8 pad.
const (
	lb4KeySize        = 12
	lb4PortOffset     = 4
	lb4SlotOffset     = 6
	lb4ProtoOffset    = 8
	lb4ScopeOffset    = 9
	lb4ServiceSize    = 12
	lb4CountOffset    = 4
	lb4BackendIDSize  = 4
	lb4BackendSize    = 12
	lb4BackendPort    = 4
	lb4BackendFlags   = 7
	beStateActive     = 0 // BE_STATE_ACTIVE; 1 terminating, 2 quarantined, 3 maintenance
	lbScopeExternal   = 0 // LB_LOOKUP_SCOPE_EXT: the entry every lookup tries first
	ipprotoAny        = 0
	ctxCheckPeriod    = 4096 // entries between two looks at the context
	ciliumUnknownHint = "unknown Cilium version, not read"
)

// readCilium counts Cilium's Service map. A Service port is a frontend
// (backend_slot 0) of the external scope with count > 0: a ClusterIP:port,
// and each NodePort, external or load-balancer address of a Service port
// (one frontend per address), once it has a backend to pick, as
// kube-proxy programs no chain for a port without endpoints (Cilium
// writes the slots before the frontend's count, so a Service port named
// here has its backends). Endpoints are all backend slots. With
// q.Frontends, the endpoint keys of those frontends (ciliumBackends). A
// map whose key or value is not the layout above is refused, never
// misread.
func readCilium(ctx context.Context, bpffs string, q Query) (*reading, error) {
	path := filepath.Join(bpffs, ciliumPinDir, ciliumServiceMap)
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil, absentError("pinned BPF map " + path + " (Cilium)")
	} else if err != nil {
		return nil, fmt.Errorf("cilium: %w", err)
	}
	m, err := ebpf.LoadPinnedMap(path, readOnly)
	if err != nil {
		return nil, fmt.Errorf("cilium: opening %s: %w", path, err)
	}
	defer m.Close()
	if m.Type() != ebpf.Hash || m.KeySize() != lb4KeySize || m.ValueSize() != lb4ServiceSize {
		return nil, fmt.Errorf("cilium: %s is a %s map with %d-byte keys and %d-byte values, want a Hash map of %d-byte lb4_key and %d-byte lb4_service: %s",
			path, m.Type(), m.KeySize(), m.ValueSize(), lb4KeySize, lb4ServiceSize, ciliumUnknownHint)
	}
	r := &reading{datapath: Cilium}
	var key [lb4KeySize]byte
	var val [lb4ServiceSize]byte
	it := m.Iterate()
	n := 0
	for it.Next(&key, &val) {
		switch {
		case binary.NativeEndian.Uint16(key[lb4SlotOffset:]) != 0:
			r.endpoints++
		case key[lb4ScopeOffset] == lbScopeExternal && binary.NativeEndian.Uint16(val[lb4CountOffset:]) > 0:
			r.services++
			r.keys = append(r.keys, ciliumFrontendKeys(key[:])...)
		}
		if n++; n%ctxCheckPeriod == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("cilium: iterating %s: %w", path, err)
	}
	r.lbMap = &mapEntry{MapInfo: MapInfo{Name: ciliumServiceMap, Type: m.Type().String(),
		MaxEntries: m.MaxEntries(), Entries: n}}
	if info, err := m.Info(); err == nil {
		r.lbMap.id, _ = info.ID()
		r.lbMap.Memlock, _ = info.Memlock()
	}
	switch {
	case len(q.Frontends) > 0:
		r.endpointKeys, r.endpointErr = ciliumBackends(ctx, m, bpffs, q.Frontends)
		r.endpointKeysRead = r.endpointErr == nil
	case len(q.EndpointsOf) > 0:
		r.endpointErr = errors.New("the query names no frontend (Query.Frontends): Cilium's maps know a Service port by address, port and protocol, not by name")
	}
	return r, nil
}

// ciliumBackends are the endpoint keys (EndpointKey) of the frontends
// (Key(Cilium, …)), looked up as the datapath does for a new connection:
// the frontend, its slots 1..count, each slot's backend. Only an active
// backend (BE_STATE_ACTIVE) in those slots counts: the slots after count
// (quarantined, or terminating beside active ones) get no new
// connections, a maintenance backend has no slot, and terminating
// backends Cilium falls back to when no active one is left are not the
// ready endpoints a churn writes. A frontend not there has none.
func ciliumBackends(ctx context.Context, svc *ebpf.Map, bpffs string, frontends []string) ([]string, error) {
	path := filepath.Join(bpffs, ciliumPinDir, ciliumBackendMap)
	be, err := ebpf.LoadPinnedMap(path, readOnly)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", path, err)
	}
	defer be.Close()
	if be.Type() != ebpf.Hash || be.KeySize() != lb4BackendIDSize || be.ValueSize() != lb4BackendSize {
		return nil, fmt.Errorf("%s is a %s map with %d-byte keys and %d-byte values, want a Hash map of %d-byte backend IDs and %d-byte lb4_backend: %s",
			path, be.Type(), be.KeySize(), be.ValueSize(), lb4BackendIDSize, lb4BackendSize, ciliumUnknownHint)
	}
	var keys []string
	for _, fe := range frontends {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		addr, proto, ok := parseCiliumFrontend(fe)
		if !ok {
			return nil, fmt.Errorf("%q is not a frontend address:port/protocol", fe)
		}
		key := lb4Key(addr, proto)
		var val [lb4ServiceSize]byte
		found, err := lookup(svc, key[:], &val)
		if err == nil && !found {
			// A frontend of Cilium before 1.19 serves every protocol.
			key[lb4ProtoOffset] = ipprotoAny
			found, err = lookup(svc, key[:], &val)
		}
		if err != nil {
			return nil, fmt.Errorf("looking up frontend %s: %w", fe, err)
		}
		if !found {
			continue
		}
		prefix := ciliumKey(addr, proto) + endpointArrow
		for slot := range binary.NativeEndian.Uint16(val[lb4CountOffset:]) {
			binary.NativeEndian.PutUint16(key[lb4SlotOffset:], slot+1)
			var sv [lb4ServiceSize]byte
			if found, err := lookup(svc, key[:], &sv); err != nil {
				return nil, fmt.Errorf("looking up slot %d of %s: %w", slot+1, fe, err)
			} else if !found {
				continue // being rewritten: not a backend the datapath can pick now
			}
			var b [lb4BackendSize]byte
			if found, err := lookup(be, sv[:lb4BackendIDSize], &b); err != nil {
				return nil, fmt.Errorf("looking up backend %d of %s: %w", binary.NativeEndian.Uint32(sv[:]), fe, err)
			} else if !found || b[lb4BackendFlags] != beStateActive {
				continue
			}
			ep := netip.AddrPortFrom(netip.AddrFrom4([4]byte(b[0:4])), binary.BigEndian.Uint16(b[lb4BackendPort:]))
			keys = append(keys, prefix+ep.String())
		}
	}
	return keys, nil
}

// lookup reads key's value into out; found is false where there is none.
func lookup(m *ebpf.Map, key []byte, out any) (found bool, err error) {
	err = m.Lookup(key, out)
	if errors.Is(err, ebpf.ErrKeyNotExist) {
		return false, nil
	}
	return err == nil, err
}

// lb4Key is the frontend (slot 0, external scope) lb4_key of addr.
func lb4Key(addr netip.AddrPort, proto byte) [lb4KeySize]byte {
	var k [lb4KeySize]byte
	a := addr.Addr().As4()
	copy(k[0:4], a[:])
	binary.BigEndian.PutUint16(k[lb4PortOffset:], addr.Port())
	k[lb4ProtoOffset] = proto
	return k
}
