package datapath

import (
	"net/netip"
	"strings"
	"testing"
)

func TestDummyServicesUniqueInRangeAndCumulative(t *testing.T) {
	const n = 100000
	svcs := DummyServices(n, 4)
	spec := Spec{Services: svcs}
	if err := spec.Validate(); err != nil {
		t.Fatal(err)
	}
	if spec.Endpoints() != 4*n {
		t.Fatalf("%d endpoints, want %d", spec.Endpoints(), 4*n)
	}
	for _, s := range svcs[:10] {
		for _, ep := range s.Endpoints {
			if !DummyEndpointCIDR.Contains(ep.IP) {
				t.Fatalf("%s: endpoint %s outside %s", s.Key(), ep.IP, DummyEndpointCIDR)
			}
		}
	}
	small := DummyServices(1000, 4)
	for i := range small {
		if small[i].Key() != svcs[i].Key() || small[i].VIP != svcs[i].VIP || small[i].Endpoints[3] != svcs[i].Endpoints[3] {
			t.Fatalf("step of 1000 is not a prefix of the step of %d at %d", n, i)
		}
	}
	// Test VIPs (198.18.128.0/24) never collide with dummy VIPs.
	testNet := netip.PrefixFrom(TestVIP(0), 24).Masked()
	for _, s := range svcs {
		if testNet.Contains(s.VIP) {
			t.Fatalf("dummy %s has VIP %s inside the test range %s", s.Key(), s.VIP, testNet)
		}
	}
}

func TestPlace(t *testing.T) {
	d := DummyServices(100, 1)
	test := []Service{{Namespace: "cnibench", Name: "server", VIP: TestVIP(0), Port: 5201, Protocol: TCP, Endpoints: []Endpoint{{IP: d[0].Endpoints[0].IP, Port: 1}}}}
	for pos, want := range map[string]int{PositionFirst: 0, PositionLast: 100} {
		all, at, err := Place(d, test, pos, 1)
		if err != nil || at != want || all[at].Name != "server" || len(all) != 101 {
			t.Fatalf("%s: at %d (want %d), err %v", pos, at, want, err)
		}
	}
	a1, at1, _ := Place(d, test, PositionRandom, 7)
	_, at2, _ := Place(d, test, PositionRandom, 7)
	if at1 != at2 || a1[at1].Name != "server" {
		t.Fatalf("random placement not repeatable for one seed: %d vs %d", at1, at2)
	}
	seen := map[int]bool{}
	for seed := range uint64(50) {
		_, at, _ := Place(d, test, PositionRandom, seed)
		seen[at] = true
	}
	if len(seen) < 20 {
		t.Fatalf("random placement hit only %d positions in 50 seeds", len(seen))
	}
	if _, _, err := Place(d, test, "middle", 0); err == nil {
		t.Fatal("bad position accepted")
	}
}

func TestValidateRefusesBadSpecs(t *testing.T) {
	good := DummyServices(2, 1)
	cases := map[string]func(s []Service){
		"appears twice":                func(s []Service) { s[1] = s[0] },
		"outside the lab's":            func(s []Service) { s[0].VIP = DummyEndpointCIDR.Addr() },
		"no endpoints":                 func(s []Service) { s[0].Endpoints = nil },
		"port 0":                       func(s []Service) { s[0].Port = 0 },
		`protocol "SCTP"`:              func(s []Service) { s[0].Protocol = "SCTP" },
		"both use 198.18.129.0:80/TCP": func(s []Service) { s[1].VIP, s[1].Port = s[0].VIP, s[0].Port },
		"bad endpoint":                 func(s []Service) { s[0].Endpoints[0].Port = 0 },
		"lists endpoint": func(s []Service) {
			s[0].Endpoints = append(s[0].Endpoints, s[0].Endpoints[0])
		},
		// Long endpoint lists are checked with a map.
		"lists endpoint 198.19.240.0:": func(s []Service) {
			for i := range 20 {
				ep := s[0].Endpoints[0]
				ep.Port += uint16(i + 1)
				s[0].Endpoints = append(s[0].Endpoints, ep)
			}
			s[0].Endpoints = append(s[0].Endpoints, s[0].Endpoints[3])
		},
	}
	for want, mutate := range cases {
		s := append([]Service(nil), good...)
		s[0].Endpoints = append([]Endpoint(nil), good[0].Endpoints...)
		mutate(s)
		err := (Spec{Services: s}).Validate()
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v", want, err)
		}
	}
}

// kube-proxy orders a Service's endpoints by their text: 198.19.240.10
// before 198.19.240.8. A spec already in order is returned as it is, and
// the caller's spec is never changed.
func TestInKubeProxyOrder(t *testing.T) {
	ep := func(s string, port uint16) Endpoint { return Endpoint{IP: netip.MustParseAddr(s), Port: port} }
	in := Spec{Services: []Service{
		{Name: "sorted", Endpoints: []Endpoint{ep("198.19.240.1", 80), ep("198.19.240.2", 80)}},
		{Name: "numeric", Endpoints: []Endpoint{ep("198.19.240.8", 80), ep("198.19.240.9", 80), ep("198.19.240.10", 80), ep("198.19.240.10", 8080), ep("198.19.240.10", 443)}},
	}}
	out := in.InKubeProxyOrder()
	var got []string
	for _, e := range out.Services[1].Endpoints {
		got = append(got, netip.AddrPortFrom(e.IP, e.Port).String())
	}
	if want := "198.19.240.10:443 198.19.240.10:80 198.19.240.10:8080 198.19.240.8:80 198.19.240.9:80"; strings.Join(got, " ") != want {
		t.Errorf("order %v, want %s", got, want)
	}
	if in.Services[1].Endpoints[0] != ep("198.19.240.8", 80) {
		t.Error("the caller's spec was reordered")
	}
	sorted := Spec{Services: in.Services[:1]}
	if o := sorted.InKubeProxyOrder(); &o.Services[0] != &sorted.Services[0] {
		t.Error("a spec in order was copied")
	}
}
