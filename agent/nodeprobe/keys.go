package nodeprobe

import (
	"crypto/sha256"
	"encoding/base32"
	"encoding/binary"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// ServicePort is one Service port as the API server holds it: what a
// sweep knows of a Service it created, to find it among a Report's Keys.
type ServicePort struct {
	Namespace, Name, PortName string
	Protocol                  string // TCP, UDP or SCTP
	ClusterIP                 netip.Addr
	Port                      uint16
}

// Key names a Service port the way Report.Keys does for a datapath kind,
// from what each datapath keeps of it:
//   - kube-proxy iptables: the hash of its KUBE-SVC-/KUBE-SVL- chains
//     (sha256 of "namespace/name:port" + protocol, base32, 16 characters);
//   - kube-proxy nftables: its service-ips element, "clusterIP:port/proto";
//   - Cilium: its frontend, "clusterIP:port/proto" (Cilium keys frontends
//     by protocol: a Service's TCP and UDP port 53 are two).
func Key(datapath string, s ServicePort) string {
	proto := strings.ToLower(s.Protocol)
	switch datapath {
	case KubeProxyIPTables:
		return hash32(servicePortName(s)+proto, 16)
	case KubeProxyNFTables, Cilium:
		return fmt.Sprintf("%s:%d/%s", s.ClusterIP, s.Port, proto)
	}
	return ""
}

// PortRef is how a probe request names a Service port whose endpoints it
// asks for (Query.EndpointsOf): "namespace/name:portname/protocol".
func PortRef(s ServicePort) string {
	return s.Namespace + "/" + s.Name + ":" + s.PortName + "/" + strings.ToLower(s.Protocol)
}

// parsePortRef is PortRef's inverse (ClusterIP and Port are not in it).
func parsePortRef(ref string) (ServicePort, bool) {
	rest, proto, ok := strings.Cut(ref, ":")
	if !ok {
		return ServicePort{}, false
	}
	ns, name, ok1 := strings.Cut(rest, "/")
	i := strings.LastIndex(proto, "/")
	if !ok1 || i < 0 {
		return ServicePort{}, false
	}
	return ServicePort{Namespace: ns, Name: name, PortName: proto[:i], Protocol: proto[i+1:]}, true
}

// EndpointKey names one endpoint of a Service port the way
// Report.EndpointKeys does for a datapath kind, from the chain kube-proxy
// makes for it (pkg/proxy/{iptables,nftables}/proxier.go):
//   - iptables: the hash of its KUBE-SEP- chain (sha256 of
//     "namespace/name:port" + protocol + "ip:port", base32, 16 characters);
//   - nftables: the hash of its endpoint- chain (sha256 of
//     "namespace/name/protocol/port__ip/port", base32, 8 characters);
//
// and for Cilium, which keeps no name, its frontend and backend:
// "clusterIP:port/proto→ip:port".
func EndpointKey(datapath string, s ServicePort, ep netip.AddrPort) string {
	proto := strings.ToLower(s.Protocol)
	switch datapath {
	case KubeProxyIPTables:
		return hash32(servicePortName(s)+proto+ep.String(), 16)
	case KubeProxyNFTables:
		return hash32(s.Namespace+"/"+s.Name+"/"+proto+"/"+s.PortName+"__"+ep.Addr().String()+"/"+strconv.Itoa(int(ep.Port())), 8)
	case Cilium:
		return Key(Cilium, s) + endpointArrow + ep.String()
	}
	return ""
}

// endpointArrow joins a Cilium frontend and backend in an endpoint key.
const endpointArrow = "→"

// servicePortName is kube-proxy's ServicePortName: "namespace/name",
// with ":port" when the port is named.
func servicePortName(s ServicePort) string {
	name := s.Namespace + "/" + s.Name
	if s.PortName != "" {
		name += ":" + s.PortName
	}
	return name
}

// hash32 is kube-proxy's chain-name hash: the first n characters of the
// base32 of the sha256 of s.
func hash32(s string, n int) string {
	sum := sha256.Sum256([]byte(s))
	return base32.StdEncoding.EncodeToString(sum[:])[:n]
}

// nftServiceKey decodes a service-ips element key, the concatenation
// ipv4_addr . inet_proto . inet_service with each field padded to 4 bytes.
func nftServiceKey(b []byte) (string, bool) {
	if len(b) < 10 {
		return "", false
	}
	ip := netip.AddrFrom4([4]byte(b[0:4]))
	proto, ok := protoNames[b[4]]
	if !ok {
		return "", false
	}
	return fmt.Sprintf("%s:%d/%s", ip, binary.BigEndian.Uint16(b[8:10]), proto), true
}

// ciliumFrontendKeys name an lb4_key frontend, "address:port/proto"; one
// of protocol 0 (Cilium before 1.19) serves, and is named for, each.
func ciliumFrontendKeys(b []byte) []string {
	addr := netip.AddrPortFrom(netip.AddrFrom4([4]byte(b[0:4])), binary.BigEndian.Uint16(b[lb4PortOffset:]))
	if p := b[lb4ProtoOffset]; p != ipprotoAny {
		return []string{ciliumKey(addr, p)}
	}
	return []string{ciliumKey(addr, 6), ciliumKey(addr, 17), ciliumKey(addr, 132)}
}

// ciliumKey is Key(Cilium, …) of a frontend.
func ciliumKey(addr netip.AddrPort, proto byte) string {
	name, ok := protoNames[proto]
	if !ok {
		name = strconv.Itoa(int(proto))
	}
	return addr.String() + "/" + name
}

// parseCiliumFrontend is ciliumKey's inverse, for IPv4 frontends.
func parseCiliumFrontend(s string) (netip.AddrPort, byte, bool) {
	i := strings.LastIndexByte(s, '/')
	if i < 0 {
		return netip.AddrPort{}, 0, false
	}
	addr, err := netip.ParseAddrPort(s[:i])
	if err != nil || !addr.Addr().Is4() {
		return netip.AddrPort{}, 0, false
	}
	for p, name := range protoNames {
		if name == s[i+1:] {
			return addr, p, true
		}
	}
	return netip.AddrPort{}, 0, false
}

var protoNames = map[byte]string{6: "tcp", 17: "udp", 132: "sctp"}
