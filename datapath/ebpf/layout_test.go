package ebpf

import (
	"errors"
	"net/netip"
	"strings"
	"testing"

	cebpf "github.com/cilium/ebpf"

	"github.com/cnibench/cnibench/datapath"
	"github.com/cnibench/cnibench/internal/bpftest"
)

// TestLayoutMatchesBTF checks that the Go mirrors of the map keys and
// values have the size and field offsets of the C structs, as recorded in
// the committed objects' BTF.
func TestLayoutMatchesBTF(t *testing.T) {
	mirrors := map[string][2]any{
		mapSvc: {svcKey{}, svcVal{}},
		mapBe:  {uint32(0), backendVal{}},
		mapRsk: {[16]byte{}, [8]byte{}},
		mapCT:  {[16]byte{}, [12]byte{}},
	}
	for _, load := range []func() (*cebpf.CollectionSpec, error){loadSock, loadTc} {
		spec, err := load()
		if err != nil {
			t.Fatal(err)
		}
		bpftest.CheckMaps(t, spec, mirrors)
	}
}

func TestBuildTableRejectsBadSpecs(t *testing.T) {
	ok := func() datapath.Service {
		return datapath.Service{Namespace: "ns", Name: "a", VIP: netip.MustParseAddr("198.18.128.1"), Port: 80, Protocol: datapath.TCP,
			Endpoints: []datapath.Endpoint{{IP: netip.MustParseAddr("198.19.1.10"), Port: 8080}}}
	}
	cases := []struct {
		name   string
		mutate func(s *datapath.Service)
		want   string
	}{
		{"ipv6 VIP", func(s *datapath.Service) { s.VIP = netip.MustParseAddr("fd00::1") }, "VIP fd00::1 is not IPv4"},
		{"sctp", func(s *datapath.Service) { s.Protocol = "SCTP" }, `protocol "SCTP" is not TCP or UDP`},
		{"port 0", func(s *datapath.Service) { s.Port = 0 }, "port 0"},
		{"endpoint without port", func(s *datapath.Service) { s.Endpoints[0].Port = 0 }, "endpoint 0 (198.19.1.10:0)"},
	}
	for _, c := range cases {
		s := ok()
		c.mutate(&s)
		_, err := buildTable(datapath.Spec{Services: []datapath.Service{s}})
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "ns/a:") {
			t.Errorf("%s: %v, want an error naming ns/a and saying %q", c.name, err, c.want)
		}
	}
	a, b := ok(), ok()
	b.Name = "b"
	_, err := buildTable(datapath.Spec{Services: []datapath.Service{a, b}})
	if want := "services ns/a:80/tcp and ns/b:80/tcp (entry 1) have the same VIP, port and protocol 198.18.128.1:80/TCP"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("duplicate: %v, want %q", err, want)
	}
	b.Protocol = datapath.UDP
	if _, err := buildTable(datapath.Spec{Services: []datapath.Service{a, b}}); err != nil {
		t.Errorf("TCP and UDP on the same VIP:port: %v", err)
	}
}

func TestBuildTableRevision(t *testing.T) {
	spec := dummySpec(3, 2)
	t1, _ := buildTable(spec)
	t2, _ := buildTable(spec)
	spec.Services[1].Endpoints[1].Port++
	t3, _ := buildTable(spec)
	if t1.svcs[1].rev != t2.svcs[1].rev || t1.svcs[1].rev == t3.svcs[1].rev || t1.svcs[0].rev != t3.svcs[0].rev {
		t.Errorf("revisions %#x %#x %#x: want equal for equal endpoints, different when they change", t1.svcs[1].rev, t2.svcs[1].rev, t3.svcs[1].rev)
	}
	if len(t1.ends) != 6 || t1.svcs[2].first != 4 || t1.svcs[2].n != 2 {
		t.Errorf("layout %+v, want 3 Services of 2 endpoints in order", t1.svcs)
	}
}

func TestAllocator(t *testing.T) {
	var a allocator
	a.reset(10)
	b0, _ := a.alloc(4) // 0..3
	b1, _ := a.alloc(4) // 4..7
	if b0 != 0 || b1 != 4 {
		t.Fatalf("bases %d %d, want 0 4", b0, b1)
	}
	if _, ok := a.alloc(3); ok {
		t.Fatal("allocated 3 slots with 2 free")
	}
	a.release(b0, 4)
	if b, ok := a.alloc(3); !ok || b != 0 { // first fit in the freed run
		t.Fatalf("alloc after release: %d %v, want 0", b, ok)
	}
	a.release(0, 3)
	a.release(b1, 4) // merges with 0..3 and gives all back to never-used space
	if a.next != 0 || len(a.free) != 0 {
		t.Errorf("after releasing everything: next %d, free %v; want 0, none", a.next, a.free)
	}
	if b, ok := a.alloc(10); !ok || b != 0 {
		t.Errorf("alloc(10) in an empty allocator of 10: %d %v", b, ok)
	}
	if b, ok := a.alloc(0); !ok || b != 0 {
		t.Errorf("alloc(0): %d %v", b, ok)
	}
}

func TestAutoSizeRounding(t *testing.T) {
	for _, c := range []struct{ have, need, want int }{
		{65536, 120000, 131072}, {65536, 1000, 65536}, {1000, 1001, 1024}, {1000, 1024, 1024}, {1, maxMapEntries + 1, maxMapEntries},
	} {
		if got := autoSize(c.have, c.need); got != c.want {
			t.Errorf("autoSize(%d, %d) = %d, want %d", c.have, c.need, got, c.want)
		}
	}
}

func TestOptionsValidate(t *testing.T) {
	o, err := Options{}.withDefaults()
	if err != nil || o.LBMapMax != DefaultLBMapMax || o.FlowMapMax != DefaultFlowMapMax || o.TCAttach != AttachAuto {
		t.Errorf("defaults: %+v %v", o, err)
	}
	for _, bad := range []Options{{LBMapMax: -1}, {FlowMapMax: maxMapEntries + 1}, {ExpectedFlows: -2}, {TCAttach: "xdp"}} {
		if _, err := bad.withDefaults(); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

func TestUnsupportedWraps(t *testing.T) {
	err := unsupported("tcx", cebpf.ErrNotSupported)
	for _, target := range []error{ErrUnsupported, errors.ErrUnsupported, cebpf.ErrNotSupported} {
		if !errors.Is(err, target) {
			t.Errorf("%v does not wrap %v", err, target)
		}
	}
	if err := maybeUnsupported("x", errors.New("EPERM")); errors.Is(err, ErrUnsupported) {
		t.Errorf("%v wrongly marked unsupported", err)
	}
}
