package datapath

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
)

// Address plan of lab Services, all inside the RFC 2544 benchmarking range
// the lab owns (198.18.0.0/15), so nothing can leave the lab:
//   - ClusterIPs come from ServiceCIDR, which no namespace routes: a VIP
//     only works where a datapath translates it;
//   - dummy endpoints come from DummyEndpointCIDR, which is routed nowhere:
//     a packet sent to one is dropped at the first hop, never delivered.
var (
	ServiceCIDR       = netip.MustParsePrefix("198.18.128.0/17")
	DummyEndpointCIDR = netip.MustParsePrefix("198.19.240.0/20")
)

// vipsPerPort is how many distinct ClusterIPs the Service CIDR gives
// dummies before they share a VIP on another port (a datapath keys
// Services by VIP, protocol and port, so each pair is a Service to it).
const vipsPerPort = 1<<15 - 256 // leave 198.18.128.0/24 for the test Services

// DummyServices returns n Services with endpoints each, shaped like a
// growing cluster's: svc-<i> in namespace "scale", distinct (VIP, port)
// pairs, endpoints on DummyEndpointCIDR. The same (n, endpoints) always
// gives the same Services, and DummyServices(n) is a prefix of
// DummyServices(n+k), so sweep steps are cumulative.
func DummyServices(n, endpoints int) []Service {
	svcs := make([]Service, 0, n)
	epBase := DummyEndpointCIDR.Addr().As4()
	epSpace := 1 << (32 - DummyEndpointCIDR.Bits())
	next := 0
	for i := range n {
		vip := AddOffset(ServiceCIDR.Addr(), 256+i%vipsPerPort)
		port := uint16(80 + i/vipsPerPort)
		s := Service{Namespace: "scale", Name: fmt.Sprintf("svc-%d", i), PortName: "http",
			VIP: vip, Port: port, Protocol: TCP, Endpoints: make([]Endpoint, endpoints)}
		for j := range endpoints {
			off := next % epSpace
			next++
			s.Endpoints[j] = Endpoint{IP: AddOffset(netip.AddrFrom4(epBase), off), Port: uint16(8080 + (next/epSpace)%1000)}
		}
		svcs = append(svcs, s)
	}
	return svcs
}

// TestVIP is the ClusterIP of the i-th test Service (the ones real
// traffic goes to), from 198.18.128.0/24.
func TestVIP(i int) netip.Addr { return AddOffset(ServiceCIDR.Addr(), 1+i) }

// Positions of the test Services among the dummies.
const (
	PositionRandom = "random" // as kube-proxy's map-ordered output places it
	PositionFirst  = "first"  // the best case for a linear rule walk
	PositionLast   = "last"   // the worst case
)

// Place inserts the test Services into dummies at position and returns the
// full list with the index the first test Service landed at. Random
// placement is seeded so a run can be repeated.
func Place(dummies, test []Service, position string, seed uint64) ([]Service, int, error) {
	at := 0
	switch position {
	case PositionFirst:
	case PositionLast:
		at = len(dummies)
	case PositionRandom, "":
		if len(dummies) > 0 {
			at = rand.New(rand.NewPCG(seed, 0x636e6962)).IntN(len(dummies) + 1)
		}
	default:
		return nil, 0, fmt.Errorf("service position %q: want random, first or last", position)
	}
	out := make([]Service, 0, len(dummies)+len(test))
	out = append(out, dummies[:at]...)
	out = append(out, test...)
	out = append(out, dummies[at:]...)
	return out, at, nil
}

// Validate checks a Spec the way the API server would refuse a bad one,
// and what no datapath's keys can hold twice: unique Service keys, one
// Service per VIP:port/protocol, a VIP inside ServiceCIDR, ports set, at
// least one endpoint, each with an address and port and listed once.
//
// Keys are structs, and a Service's text key is built only for an error:
// at 30,000 Services this check is part of every datapath's sync time.
func (s Spec) Validate() error {
	type svcID struct {
		ns, name string
		port     uint16
		proto    Protocol
	}
	type frontend struct {
		vip   netip.Addr
		port  uint16
		proto Protocol
	}
	seen := make(map[svcID]bool, len(s.Services))
	vips := make(map[frontend]int, len(s.Services))
	for i := range s.Services {
		svc := &s.Services[i]
		id := svcID{svc.Namespace, svc.Name, svc.Port, svc.Protocol}
		switch {
		case seen[id]:
			return fmt.Errorf("service %s appears twice", svc.Key())
		case !ServiceCIDR.Contains(svc.VIP):
			return fmt.Errorf("service %s: VIP %s is outside the lab's Service CIDR %s", svc.Key(), svc.VIP, ServiceCIDR)
		case svc.Port == 0:
			return fmt.Errorf("service %s: port 0", svc.Key())
		case svc.Protocol != TCP && svc.Protocol != UDP:
			return fmt.Errorf("service %s: protocol %q (want TCP or UDP)", svc.Key(), svc.Protocol)
		case len(svc.Endpoints) == 0:
			return fmt.Errorf("service %s: no endpoints", svc.Key())
		}
		fe := frontend{svc.VIP, svc.Port, svc.Protocol}
		if o, ok := vips[fe]; ok {
			return fmt.Errorf("services %s and %s both use %s:%d/%s", s.Services[o].Key(), svc.Key(), svc.VIP, svc.Port, svc.Protocol)
		}
		vips[fe] = i
		if err := checkEndpoints(svc); err != nil {
			return err
		}
		seen[id] = true
	}
	return nil
}

// checkEndpoints refuses a bad or repeated endpoint; a map only for long
// lists.
func checkEndpoints(svc *Service) error {
	var eps map[Endpoint]bool
	if len(svc.Endpoints) > 16 {
		eps = make(map[Endpoint]bool, len(svc.Endpoints))
	}
	for j, ep := range svc.Endpoints {
		if !ep.IP.Is4() || ep.Port == 0 {
			return fmt.Errorf("service %s: bad endpoint %s:%d", svc.Key(), ep.IP, ep.Port)
		}
		dup := false
		if eps != nil {
			dup = eps[ep]
			eps[ep] = true
		} else {
			dup = slices.Contains(svc.Endpoints[:j], ep)
		}
		if dup {
			return fmt.Errorf("service %s lists endpoint %s:%d twice", svc.Key(), ep.IP, ep.Port)
		}
	}
	return nil
}

// UniqueNames refuses two Service ports that a datapath's naming maps to
// one name (kube-proxy hashes its per-Service chain names from the
// ServicePortName and protocol, so a collision would merge two Services).
func UniqueNames(spec *Spec, name func(*Service) string) error {
	names := make(map[string]string, len(spec.Services))
	for i := range spec.Services {
		s := &spec.Services[i]
		n := name(s)
		if o, ok := names[n]; ok {
			return fmt.Errorf("services %s and %s have the same port name %q", o, s.Key(), s.ServicePortName())
		}
		names[n] = s.Key()
	}
	return nil
}

// Endpoints counts the endpoints of all Services.
func (s Spec) Endpoints() int {
	n := 0
	for _, svc := range s.Services {
		n += len(svc.Endpoints)
	}
	return n
}

// AddOffset is the IPv4 address off after a, with the carry.
func AddOffset(a netip.Addr, off int) netip.Addr {
	b := a.As4()
	v := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
	v += uint32(off)
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

// InKubeProxyOrder returns s with every Service's endpoints in the order
// kube-proxy programs them: sorted by their "ip:port" text, as its
// endpoint cache sorts them. The order decides which endpoint each
// iptables probability or nftables numgen index goes to (198.19.240.10
// before 198.19.240.8), so the lab's rules match kube-proxy's to the
// letter (the fidelity test on a real cluster found this). Services
// already in that order are not copied; s itself is never changed.
func (s Spec) InKubeProxyOrder() Spec {
	var out []Service
	for i := range s.Services {
		eps := s.Services[i].Endpoints
		if slices.IsSortedFunc(eps, compareEndpointText) {
			continue
		}
		if out == nil {
			out = slices.Clone(s.Services)
		}
		out[i].Endpoints = slices.SortedFunc(slices.Values(eps), compareEndpointText)
	}
	if out == nil {
		return s
	}
	return Spec{Services: out}
}

// compareEndpointText orders endpoints by their "ip:port" text, written
// into stack buffers: a sweep checks the order of every endpoint of every
// Service on each sync.
func compareEndpointText(a, b Endpoint) int {
	var ba, bb [64]byte
	return bytes.Compare(netip.AddrPortFrom(a.IP, a.Port).AppendTo(ba[:0]), netip.AddrPortFrom(b.IP, b.Port).AppendTo(bb[:0]))
}
