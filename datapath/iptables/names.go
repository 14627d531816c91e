package iptables

import (
	"crypto/sha256"
	"encoding/base32"
	"net"
	"strconv"
	"strings"

	"github.com/cnibench/cnibench/datapath"
)

// Chains kube-proxy's iptables mode creates (pkg/proxy/iptables/proxier.go).
const (
	chainServices         = "KUBE-SERVICES"
	chainExternalServices = "KUBE-EXTERNAL-SERVICES"
	chainNodePorts        = "KUBE-NODEPORTS"
	chainPostrouting      = "KUBE-POSTROUTING"
	chainMarkMasq         = "KUBE-MARK-MASQ"
	chainForward          = "KUBE-FORWARD"
	chainProxyFirewall    = "KUBE-PROXY-FIREWALL"

	prefixSVC = "KUBE-SVC-"
	prefixSEP = "KUBE-SEP-"
)

// natChains and filterChains are the fixed chains of each table, in the
// order kube-proxy declares them.
var (
	natChains    = []string{chainServices, chainNodePorts, chainPostrouting, chainMarkMasq}
	filterChains = []string{chainServices, chainExternalServices, chainForward, chainNodePorts, chainProxyFirewall}
)

// jump is a rule in a built-in chain sending packets to one of ours,
// kube-proxy's iptablesJumpChains.
type jump struct {
	table, src, dst, comment string
	extra                    []string
}

var jumps = []jump{
	{"filter", "INPUT", chainExternalServices, "kubernetes externally-visible service portals", ctNew},
	{"filter", "FORWARD", chainExternalServices, "kubernetes externally-visible service portals", ctNew},
	{"filter", "INPUT", chainNodePorts, "kubernetes health check service ports", nil},
	{"filter", "FORWARD", chainServices, "kubernetes service portals", ctNew},
	{"filter", "OUTPUT", chainServices, "kubernetes service portals", ctNew},
	{"filter", "FORWARD", chainForward, "kubernetes forwarding rules", nil},
	{"filter", "INPUT", chainProxyFirewall, "kubernetes load balancer firewall", ctNew},
	{"filter", "OUTPUT", chainProxyFirewall, "kubernetes load balancer firewall", ctNew},
	{"filter", "FORWARD", chainProxyFirewall, "kubernetes load balancer firewall", ctNew},
	{"nat", "OUTPUT", chainServices, "kubernetes service portals", nil},
	{"nat", "PREROUTING", chainServices, "kubernetes service portals", nil},
	{"nat", "POSTROUTING", chainPostrouting, "kubernetes postrouting rules", nil},
}

var ctNew = []string{"-m", "conntrack", "--ctstate", "NEW"}

// isOurChain reports whether a chain of table is one kube-proxy owns.
func isOurChain(table, name string) bool {
	if table == "nat" && (strings.HasPrefix(name, prefixSVC) || strings.HasPrefix(name, prefixSEP)) {
		return true
	}
	fixed := filterChains
	if table == "nat" {
		fixed = natChains
	}
	for _, c := range fixed {
		if c == name {
			return true
		}
	}
	return false
}

func proto(s *datapath.Service) string { return strings.ToLower(string(s.Protocol)) }

// endpointString is proxy.BaseEndpointInfo.String(): "ip:port".
func endpointString(ep datapath.Endpoint) string {
	return net.JoinHostPort(ep.IP.String(), strconv.Itoa(int(ep.Port)))
}

// hash16 is kube-proxy's chain-name hash: base32 of sha256, 16 characters,
// so a chain name stays within iptables' 28-character limit.
func hash16(s string) string {
	sum := sha256.Sum256([]byte(s))
	return base32.StdEncoding.EncodeToString(sum[:])[:16]
}

// svcChain is servicePortPolicyClusterChain: KUBE-SVC-<hash(portname+proto)>.
func svcChain(s *datapath.Service) string { return prefixSVC + hash16(s.ServicePortName()+proto(s)) }

// sepChain is servicePortEndpointChainName: KUBE-SEP-<hash(portname+proto+ip:port)>.
func sepChain(s *datapath.Service, ep datapath.Endpoint) string {
	return prefixSEP + hash16(s.ServicePortName()+proto(s)+endpointString(ep))
}
