package nftables

import (
	"crypto/sha256"
	"encoding/base32"
	"fmt"
	"strconv"
	"strings"

	"github.com/cnibench/cnibench/datapath"
	"sigs.k8s.io/knftables"
)

// Objects of kube-proxy's nftables mode (pkg/proxy/nftables/proxier.go).
const (
	table = "kube-proxy"

	filterPreroutingPreDNATChain = "filter-prerouting-pre-dnat"
	filterOutputPreDNATChain     = "filter-output-pre-dnat"
	filterInputChain             = "filter-input"
	filterForwardChain           = "filter-forward"
	filterOutputChain            = "filter-output"
	natPreroutingChain           = "nat-prerouting"
	natOutputChain               = "nat-output"
	natPostroutingChain          = "nat-postrouting"

	servicesChain       = "services"
	serviceIPsMap       = "service-ips"
	serviceNodePortsMap = "service-nodeports"
	nodePortIPsSet      = "nodeport-ips"
	clusterIPsSet       = "cluster-ips"

	serviceEndpointsCheckChain  = "service-endpoints-check"
	nodePortEndpointsCheckChain = "nodeport-endpoints-check"
	noEndpointServicesMap       = "no-endpoint-services"
	noEndpointNodePortsMap      = "no-endpoint-nodeports"
	rejectChain                 = "reject-chain"
	clusterIPsCheckChain        = "cluster-ips-check"
	firewallIPsMap              = "firewall-ips"
	firewallCheckChain          = "firewall-check"
	markMasqChain               = "mark-for-masquerade"
	masqueradingChain           = "masquerading"

	servicePrefix  = "service-"
	endpointPrefix = "endpoint-"

	// The flat layout's objects (see flat.go).
	endpointsMapPrefix = "endpoints-" // + tcp, udp
	hairpinSet         = "endpoint-hairpin"
	lbPrefix           = "lb-"
)

// baseChain is one of kube-proxy's chains attached to a netfilter hook.
type baseChain struct {
	name      string
	chainType knftables.BaseChainType
	hook      knftables.BaseChainHook
	priority  knftables.BaseChainPriority
}

// baseChains are kube-proxy v1.34's: the firewall check before DNAT, the
// endpoint and cluster-IP checks at filter priority (after DNAT).
var baseChains = []baseChain{
	{filterPreroutingPreDNATChain, knftables.FilterType, knftables.PreroutingHook, knftables.DNATPriority + "-10"},
	{filterOutputPreDNATChain, knftables.FilterType, knftables.OutputHook, knftables.DNATPriority + "-10"},
	{filterInputChain, knftables.FilterType, knftables.InputHook, knftables.FilterPriority},
	{filterForwardChain, knftables.FilterType, knftables.ForwardHook, knftables.FilterPriority},
	{filterOutputChain, knftables.FilterType, knftables.OutputHook, knftables.FilterPriority},
	{natPreroutingChain, knftables.NATType, knftables.PreroutingHook, knftables.DNATPriority},
	{natOutputChain, knftables.NATType, knftables.OutputHook, knftables.DNATPriority},
	{natPostroutingChain, knftables.NATType, knftables.PostroutingHook, knftables.SNATPriority},
}

// jumpChain is a regular chain jumped to from a base chain.
type jumpChain struct{ dst, src, extra string }

var jumpChains = []jumpChain{
	{nodePortEndpointsCheckChain, filterInputChain, "ct state new"},
	{serviceEndpointsCheckChain, filterInputChain, "ct state new"},
	{serviceEndpointsCheckChain, filterForwardChain, "ct state new"},
	{serviceEndpointsCheckChain, filterOutputChain, "ct state new"},
	{firewallCheckChain, filterPreroutingPreDNATChain, "ct state new"},
	{firewallCheckChain, filterOutputPreDNATChain, "ct state new"},
	{servicesChain, natOutputChain, ""},
	{servicesChain, natPreroutingChain, ""},
	{masqueradingChain, natPostroutingChain, ""},
	{clusterIPsCheckChain, filterForwardChain, "ct state new"},
	{clusterIPsCheckChain, filterOutputChain, "ct state new"},
}

// fixedChains are the regular chains every sync creates.
var fixedChains = []string{
	nodePortEndpointsCheckChain, serviceEndpointsCheckChain, firewallCheckChain, servicesChain,
	masqueradingChain, clusterIPsCheckChain, markMasqChain, rejectChain,
}

func proto(s *datapath.Service) string { return strings.ToLower(string(s.Protocol)) }

// hashAndTruncate is kube-proxy's: an 8-character base32 sha256 prefix, then
// the name, cut to fit nftables' name limit.
func hashAndTruncate(name string) string {
	sum := sha256.Sum256([]byte(name))
	name = base32.StdEncoding.EncodeToString(sum[:])[:8] + "-" + name
	const max = knftables.NameLengthMax - 16
	if len(name) > max {
		name = name[:max-3] + "..."
	}
	return name
}

// serviceChain is "service-<hash>-namespace/name/proto/portname".
func serviceChain(s *datapath.Service) string {
	return servicePrefix + hashAndTruncate(s.Namespace+"/"+s.Name+"/"+proto(s)+"/"+s.PortName)
}

// endpointChain is "endpoint-<hash>-namespace/name/proto/portname__ip/port".
func endpointChain(s *datapath.Service, ep datapath.Endpoint) string {
	return endpointPrefix + hashAndTruncate(s.Namespace+"/"+s.Name+"/"+proto(s)+"/"+s.PortName+
		"__"+ep.IP.String()+"/"+strconv.Itoa(int(ep.Port)))
}

// endpointsMap is the flat layout's endpoint map of a protocol.
func endpointsMap(proto string) string { return endpointsMapPrefix + proto }

// flatProtos are the protocols the flat layout has a map and a rule for.
var flatProtos = []string{"tcp", "udp"}

// lbChain is the flat layout's shared chain for Services with n endpoints.
func lbChain(n int) string { return fmt.Sprintf("%s%d-endpoints", lbPrefix, n) }
