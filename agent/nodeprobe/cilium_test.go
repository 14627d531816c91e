package nodeprobe

import (
	"context"
	"encoding/binary"
	"errors"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/cnibench/cnibench/datapath"
	"github.com/cnibench/cnibench/datapath/nftables"
	"github.com/cnibench/cnibench/lab/labtest"
)

// mountBPFFS mounts a private BPF filesystem on a temporary directory,
// unmounted at cleanup (before the directory is removed).
func mountBPFFS(t *testing.T) string {
	t.Helper()
	labtest.NeedRoot(t)
	dir := t.TempDir()
	if err := unix.Mount("bpf", dir, "bpf", 0, "mode=0700"); err != nil {
		t.Skipf("cannot mount a BPF filesystem here: %v", err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, 0); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// ciliumLB is Cilium 1.20's IPv4 LB maps pinned in a BPF filesystem,
// written as its BPF reconciler (pkg/loadbalancer/reconciler) writes them.
type ciliumLB struct {
	t       *testing.T
	svc, be *ebpf.Map
	ids     map[netip.AddrPort]uint32 // backend IDs, one per address as Cilium allocates them
}

// ciliumBackend is one backend of a frontend as the reconciler sees it.
type ciliumBackend struct {
	ep        netip.AddrPort
	state     uint8 // BE_STATE_*
	unhealthy bool  // failed a health check: active in the backends map, slotted after count
}

func active(ep string) ciliumBackend {
	return ciliumBackend{ep: netip.MustParseAddrPort(ep)}
}

// pinCiliumLB pins the Service map (with svcKey-byte keys, svcVal-byte
// values) and the backends map (beVal-byte values) under bpffs.
func pinCiliumLB(t *testing.T, bpffs string, svcKey, svcVal, beVal uint32) *ciliumLB {
	t.Helper()
	return &ciliumLB{t: t,
		svc: newMap(t, bpffs, &ebpf.MapSpec{Name: ciliumServiceMap, Type: ebpf.Hash, KeySize: svcKey, ValueSize: svcVal, MaxEntries: 4096}),
		be:  newMap(t, bpffs, &ebpf.MapSpec{Name: ciliumBackendMap, Type: ebpf.Hash, KeySize: lb4BackendIDSize, ValueSize: beVal, MaxEntries: 4096}),
		ids: map[netip.AddrPort]uint32{}}
}

// program writes frontend fe (proto, scope) with its backends: each in
// the backends map, active (or, with none active, terminating) ones in
// slots 1..count, the other terminating and unhealthy or quarantined
// ones after them (qcount), maintenance ones in no slot; slots left from
// an earlier, longer program are deleted.
func (lb *ciliumLB) program(fe string, proto, scope uint8, bes ...ciliumBackend) {
	lb.t.Helper()
	rank := func(b ciliumBackend) int {
		switch {
		case b.unhealthy || b.state == 2:
			return 2
		default:
			return int(b.state)
		}
	}
	slotted := slices.DeleteFunc(slices.Clone(bes), func(b ciliumBackend) bool { return b.state == 3 })
	slices.SortStableFunc(slotted, func(a, b ciliumBackend) int { return rank(a) - rank(b) })
	var act, term int
	for _, b := range slotted {
		switch rank(b) {
		case 0:
			act++
		case 1:
			term++
		}
	}
	count := act
	if act == 0 {
		count = term
	}
	for _, b := range bes {
		id, ok := lb.ids[b.ep]
		if !ok {
			id = uint32(len(lb.ids) + 1)
			lb.ids[b.ep] = id
		}
		val := make([]byte, lb.be.ValueSize())
		a := b.ep.Addr().As4()
		copy(val, a[:])
		binary.BigEndian.PutUint16(val[4:], b.ep.Port())
		val[6], val[7] = proto, b.state
		lb.put(lb.be, binary.NativeEndian.AppendUint32(nil, id), val)
	}
	addr := netip.MustParseAddrPort(fe)
	key := func(slot int) []byte {
		k := make([]byte, lb.svc.KeySize())
		a := addr.Addr().As4()
		copy(k, a[:])
		binary.BigEndian.PutUint16(k[4:], addr.Port())
		binary.NativeEndian.PutUint16(k[6:], uint16(slot))
		k[8], k[9] = proto, scope
		return k
	}
	for i, b := range slotted {
		val := make([]byte, lb.svc.ValueSize())
		binary.NativeEndian.PutUint32(val, lb.ids[b.ep])
		lb.put(lb.svc, key(i+1), val)
	}
	master := make([]byte, lb.svc.ValueSize())
	binary.NativeEndian.PutUint16(master[4:], uint16(count))
	if len(master) >= 12 {
		binary.NativeEndian.PutUint16(master[10:], uint16(len(slotted)-count))
	}
	lb.put(lb.svc, key(0), master)
	for slot := len(slotted) + 1; ; slot++ {
		if err := lb.svc.Delete(key(slot)); errors.Is(err, ebpf.ErrKeyNotExist) {
			break
		} else if err != nil {
			lb.t.Fatal(err)
		}
	}
}

func (lb *ciliumLB) put(m *ebpf.Map, k, v []byte) {
	lb.t.Helper()
	if err := m.Put(k, v); err != nil {
		lb.t.Fatal(err)
	}
}

// pinServiceMap pins Cilium's LB maps (Service map keys keySize bytes)
// with frontends TCP Services on port 80 of slots active backends each.
func pinServiceMap(t *testing.T, bpffs string, keySize uint32, frontends, slots int) *ciliumLB {
	t.Helper()
	lb := pinCiliumLB(t, bpffs, keySize, lb4ServiceSize, lb4BackendSize)
	for f := range frontends {
		var bes []ciliumBackend
		for s := range slots {
			bes = append(bes, ciliumBackend{ep: netip.AddrPortFrom(netip.AddrFrom4([4]byte{198, 18, byte(f), byte(s + 1)}), 8080)})
		}
		lb.program(netip.AddrPortFrom(netip.AddrFrom4([4]byte{198, 18, 128, byte(f)}), 80).String(), unix.IPPROTO_TCP, 0, bes...)
	}
	return lb
}

// Cilium: the Service ports (frontends with backends) and backend slots
// of the pinned Service map, named by their keys, and the memory of its
// maps (which maps: TestCiliumMapsPinnedOnly).
func TestReadCilium(t *testing.T) {
	ns := labtest.ScratchNS(t, "npc")
	bpffs := mountBPFFS(t)
	pinServiceMap(t, bpffs, lb4KeySize, 20, 4)
	rep := read(t, ns, bpffs)
	checkCounts(t, rep, Cilium, 20, 80)
	var frontends []datapath.Service
	for f := range 20 {
		frontends = append(frontends, datapath.Service{VIP: netip.AddrFrom4([4]byte{198, 18, 128, byte(f)}), Port: 80, Protocol: datapath.TCP})
	}
	checkKeys(t, rep, datapath.Spec{Services: frontends})
	var lbInfo *MapInfo
	var sum uint64
	for i, m := range rep.Maps {
		if m.Name == ciliumServiceMap {
			lbInfo = &rep.Maps[i]
		}
		sum += m.Memlock
	}
	if len(rep.Maps) != 2 || sum != rep.BPFMapBytes || rep.BPFMapBytes == 0 {
		t.Errorf("maps %+v, %d bytes: want the Service and backends maps and their memlock", rep.Maps, rep.BPFMapBytes)
	}
	if lbInfo == nil || lbInfo.Entries != 100 || lbInfo.MaxEntries != 4096 || lbInfo.Memlock == 0 || lbInfo.Type != ebpf.Hash.String() {
		t.Fatalf("maps %+v: want %s with 100 entries of 4096 and its memlock", rep.Maps, ciliumServiceMap)
	}
	if len(rep.Errors) != 0 {
		t.Errorf("errors %q", rep.Errors)
	}
	if rep.EndpointKeysRead || len(rep.EndpointKeys) != 0 {
		t.Errorf("endpoint keys read without being asked for: %q", rep.EndpointKeys)
	}
}

// ciliumPort is a Service port as a sweep knows it.
func ciliumPort(name, frontend, proto string) ServicePort {
	ap := netip.MustParseAddrPort(frontend)
	return ServicePort{Namespace: "scale", Name: name, PortName: "p", Protocol: proto, ClusterIP: ap.Addr(), Port: ap.Port()}
}

// readAsking reads bpffs asking for the endpoint keys of ports.
func readAsking(t *testing.T, ns, bpffs string, ports ...ServicePort) *Report {
	t.Helper()
	var q Query
	for _, sp := range ports {
		q.AskEndpoints(sp)
	}
	rep, err := Read(t.Context(), Options{Node: "node-t", NetNS: ns, BPFFS: bpffs, Query: q})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// checkCiliumEndpoints fails unless rep's endpoint keys are exactly those
// of want (Service port → backends).
func checkCiliumEndpoints(t *testing.T, rep *Report, want map[ServicePort][]string) {
	t.Helper()
	if !rep.EndpointKeysRead {
		t.Fatalf("endpoint keys not read (errors %q)", rep.Errors)
	}
	var keys []string
	for sp, eps := range want {
		for _, ep := range eps {
			keys = append(keys, EndpointKey(Cilium, sp, netip.MustParseAddrPort(ep)))
		}
	}
	slices.Sort(keys)
	got := slices.Sorted(slices.Values(rep.EndpointKeys))
	if !slices.Equal(got, keys) {
		t.Fatalf("endpoint keys\n  %q\nwant\n  %q", got, keys)
	}
}

// Endpoint keys of the Services asked for, read as the datapath picks a
// backend for a new connection: only active backends in the frontend's
// slots 1..count count (not a terminating or unhealthy one slotted after
// them, a maintenance one with no slot, nor the terminating ones Cilium
// falls back to); a frontend is its address, port and protocol (TCP and
// UDP port 53 are two Service ports); a frontend with no backend is no
// Service port; a two-scope Service's internal twin is not another one.
// An endpoint replaced shows (the counts stay the same), and a query
// naming Services only by name (an older client) reads none, saying why.
func TestReadCiliumEndpointKeys(t *testing.T) {
	ns := labtest.ScratchNS(t, "npk")
	bpffs := mountBPFFS(t)
	lb := pinCiliumLB(t, bpffs, lb4KeySize, lb4ServiceSize, lb4BackendSize)
	dnsUDP, dnsTCP := ciliumPort("dns", "10.96.0.10:53", "UDP"), ciliumPort("dns", "10.96.0.10:53", "TCP")
	web, draining, empty := ciliumPort("web", "10.96.0.20:80", "TCP"), ciliumPort("draining", "10.96.0.30:80", "TCP"), ciliumPort("empty", "10.96.0.40:80", "TCP")
	lb.program("10.96.0.10:53", unix.IPPROTO_UDP, 0,
		active("198.19.1.5:53"), active("198.19.1.6:53"), active("198.19.2.5:53"),
		ciliumBackend{ep: netip.MustParseAddrPort("198.19.2.6:53"), state: 1},
		ciliumBackend{ep: netip.MustParseAddrPort("198.19.2.7:53"), state: 3},
		ciliumBackend{ep: netip.MustParseAddrPort("198.19.2.8:53"), unhealthy: true})
	lb.program("10.96.0.10:53", unix.IPPROTO_TCP, 0, active("198.19.1.5:53"), active("198.19.1.6:53"))
	lb.program("10.96.0.20:80", unix.IPPROTO_TCP, 0, active("198.19.1.7:8080"), active("198.19.2.9:8080"))
	lb.program("10.96.0.20:80", unix.IPPROTO_TCP, 1, active("198.19.1.7:8080")) // internal scope
	lb.program("10.96.0.30:80", unix.IPPROTO_TCP, 0, ciliumBackend{ep: netip.MustParseAddrPort("198.19.1.8:8080"), state: 1})
	lb.program("10.96.0.40:80", unix.IPPROTO_TCP, 0)

	rep := readAsking(t, ns, bpffs, dnsUDP, web, draining, empty, ciliumPort("gone", "10.96.0.99:80", "TCP"))
	checkCounts(t, rep, Cilium, 4, 11)
	if want := []string{"10.96.0.10:53/tcp", "10.96.0.10:53/udp", "10.96.0.20:80/tcp", "10.96.0.30:80/tcp"}; !slices.Equal(slices.Sorted(slices.Values(rep.Keys)), want) {
		t.Errorf("keys %q, want %q", rep.Keys, want)
	}
	if Key(Cilium, dnsUDP) != "10.96.0.10:53/udp" || EndpointKey(Cilium, dnsUDP, netip.MustParseAddrPort("198.19.1.5:53")) != "10.96.0.10:53/udp→198.19.1.5:53" {
		t.Errorf("keys of %+v: %q, %q", dnsUDP, Key(Cilium, dnsUDP), EndpointKey(Cilium, dnsUDP, netip.MustParseAddrPort("198.19.1.5:53")))
	}
	checkCiliumEndpoints(t, rep, map[ServicePort][]string{
		dnsUDP: {"198.19.1.5:53", "198.19.1.6:53", "198.19.2.5:53"},
		web:    {"198.19.1.7:8080", "198.19.2.9:8080"},
	})
	if len(rep.Errors) != 0 {
		t.Errorf("errors %q", rep.Errors)
	}

	// web's second endpoint replaced, dns/tcp asked too.
	lb.program("10.96.0.20:80", unix.IPPROTO_TCP, 0, active("198.19.1.7:8080"), active("198.19.2.10:8080"))
	rep = readAsking(t, ns, bpffs, web, dnsTCP)
	checkCounts(t, rep, Cilium, 4, 11)
	checkCiliumEndpoints(t, rep, map[ServicePort][]string{
		web:    {"198.19.1.7:8080", "198.19.2.10:8080"},
		dnsTCP: {"198.19.1.5:53", "198.19.1.6:53"},
	})

	// An older client names the Services by name only.
	rep, err := Read(t.Context(), Options{Node: "node-t", NetNS: ns, BPFFS: bpffs, Query: Query{EndpointsOf: []string{PortRef(web)}}})
	if err != nil {
		t.Fatal(err)
	}
	if rep.EndpointKeysRead || len(rep.EndpointKeys) > 0 || !strings.Contains(strings.Join(rep.Errors, "\n"), "endpoint keys: not read for cilium: the query names no frontend") {
		t.Errorf("asked by name only: read %v %q, errors %q", rep.EndpointKeysRead, rep.EndpointKeys, rep.Errors)
	}
}

// A frontend of protocol 0 (Cilium before 1.19, or --bpf-lb-proto-diff
// off) serves every protocol: it is named for each, and its backends are
// read for a Service port of any of them.
func TestReadCiliumProtocolAny(t *testing.T) {
	ns := labtest.ScratchNS(t, "npa")
	bpffs := mountBPFFS(t)
	lb := pinCiliumLB(t, bpffs, lb4KeySize, lb4ServiceSize, lb4BackendSize)
	lb.program("10.96.0.50:80", 0, 0, active("198.19.1.9:80"))
	sp := ciliumPort("legacy", "10.96.0.50:80", "TCP")
	rep := readAsking(t, ns, bpffs, sp)
	checkCounts(t, rep, Cilium, 1, 1)
	if want := []string{"10.96.0.50:80/sctp", "10.96.0.50:80/tcp", "10.96.0.50:80/udp"}; !slices.Equal(slices.Sorted(slices.Values(rep.Keys)), want) {
		t.Errorf("keys %q, want %q", rep.Keys, want)
	}
	checkCiliumEndpoints(t, rep, map[ServicePort][]string{sp: {"198.19.1.9:80"}})
}

// A Service map whose key or value is not lb4_key's or lb4_service's
// (another Cilium version) is refused with a clear error, never misread;
// a backends map of another layout leaves the counts read and the
// endpoint keys not, saying why.
func TestReadCiliumUnknownLayout(t *testing.T) {
	for _, c := range []struct {
		name            string
		key, val, beVal uint32
		want            string // Read's error, "" for a report
	}{
		{"service key", 16, lb4ServiceSize, lb4BackendSize, "16-byte keys"},
		{"service value", lb4KeySize, 16, lb4BackendSize, "16-byte values"},
		{"backend value", lb4KeySize, lb4ServiceSize, 16, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			ns := labtest.ScratchNS(t, "npw")
			bpffs := mountBPFFS(t)
			lb := pinCiliumLB(t, bpffs, c.key, c.val, c.beVal)
			lb.program("10.96.0.20:80", unix.IPPROTO_TCP, 0, active("198.19.1.7:8080"), active("198.19.2.9:8080"))
			var q Query
			q.AskEndpoints(ciliumPort("web", "10.96.0.20:80", "TCP"))
			rep, err := Read(context.Background(), Options{NetNS: ns, BPFFS: bpffs, Query: q})
			if c.want != "" {
				if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "unknown Cilium version") {
					t.Fatalf("Read: %v, want an unknown-version error naming %q", err, c.want)
				}
				t.Log(err)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			checkCounts(t, rep, Cilium, 1, 2)
			text := strings.Join(rep.Errors, "\n")
			if rep.EndpointKeysRead || len(rep.EndpointKeys) > 0 || !strings.Contains(text, ciliumBackendMap) || !strings.Contains(text, "16-byte values") || !strings.Contains(text, "unknown Cilium version") {
				t.Errorf("backends map of 16-byte values: read %v %q, errors %q", rep.EndpointKeysRead, rep.EndpointKeys, rep.Errors)
			}
			t.Log(text)
		})
	}
}

// Cilium beside a kube-proxy that was left running: Cilium is reported,
// the other datapath named in Errors.
func TestReadCiliumBesideKubeProxy(t *testing.T) {
	ns := labtest.ScratchNS(t, "npb")
	d, err := nftables.New(ns, nftables.Options{})
	d = labtest.OrSkip(t, d, err)
	program(t, d, scaleSpec(9, 2))
	bpffs := mountBPFFS(t)
	pinServiceMap(t, bpffs, lb4KeySize, 8, 2)
	rep := read(t, ns, bpffs)
	checkCounts(t, rep, Cilium, 8, 16)
	if text := strings.Join(rep.Errors, "\n"); !strings.Contains(text, "also found "+KubeProxyNFTables+" holding 10 Services, 20 endpoints") {
		t.Errorf("errors %q do not name the kube-proxy nftables layout", rep.Errors)
	}
}
