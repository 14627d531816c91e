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
//   - Cilium: its frontend, "clusterIP:port" (older Cilium versions key
//     frontends without the protocol).
func Key(datapath string, s ServicePort) string {
	proto := strings.ToLower(s.Protocol)
	switch datapath {
	case KubeProxyIPTables:
		return hash32(servicePortName(s)+proto, 16)
	case KubeProxyNFTables:
		return fmt.Sprintf("%s:%d/%s", s.ClusterIP, s.Port, proto)
	case Cilium:
		return fmt.Sprintf("%s:%d", s.ClusterIP, s.Port)
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
//     "namespace/name/protocol/port__ip/port", base32, 8 characters).
//
// Cilium's backends are not named ("": not read).
func EndpointKey(datapath string, s ServicePort, ep netip.AddrPort) string {
	proto := strings.ToLower(s.Protocol)
	switch datapath {
	case KubeProxyIPTables:
		return hash32(servicePortName(s)+proto+ep.String(), 16)
	case KubeProxyNFTables:
		return hash32(s.Namespace+"/"+s.Name+"/"+proto+"/"+s.PortName+"__"+ep.Addr().String()+"/"+strconv.Itoa(int(ep.Port())), 8)
	}
	return ""
}

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

// ciliumFrontendKey is an lb4_key frontend's "address:port".
func ciliumFrontendKey(b []byte) string {
	ip := netip.AddrFrom4([4]byte(b[0:4]))
	return fmt.Sprintf("%s:%d", ip, binary.BigEndian.Uint16(b[4:6]))
}

var protoNames = map[byte]string{6: "tcp", 17: "udp", 132: "sctp"}
