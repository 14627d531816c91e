package nodeprobe

import "strings"

// kube-proxy's iptables mode chains (pkg/proxy/iptables/proxier.go) as
// iptables-nft lays them out: table ip nat.
const (
	iptNATTable    = "nat"
	iptServices    = "KUBE-SERVICES"
	iptSvcCluster  = "KUBE-SVC-" // + hash of Service port and protocol, Cluster traffic policy
	iptSvcLocal    = "KUBE-SVL-" // the same hash, Local traffic policy
	iptEndpointSEP = "KUBE-SEP-" // one chain per endpoint of a Service port
)

// readKubeProxyIPT counts kube-proxy's iptables mode given the chains of
// table ip nat: Services are the Service ports with a KUBE-SVC-<hash> or
// KUBE-SVL-<hash> chain (the same hash names both, so a port with both
// policies counts once; ports without endpoints have neither), Endpoints
// the KUBE-SEP-* chains. With endpoints, the hash of every KUBE-SEP-
// chain is an endpoint key: the hash cannot be traced back to a Service,
// and kube-proxy deletes a stale one in the restore that stops using it.
func readKubeProxyIPT(chains []string, endpoints bool) (*reading, error) {
	r := &reading{datapath: KubeProxyIPTables, endpointKeysRead: endpoints}
	ports := map[string]bool{}
	seen := false
	for _, ch := range chains {
		switch {
		case ch == iptServices:
			seen = true
		case strings.HasPrefix(ch, iptSvcCluster):
			ports[strings.TrimPrefix(ch, iptSvcCluster)] = true
		case strings.HasPrefix(ch, iptSvcLocal):
			ports[strings.TrimPrefix(ch, iptSvcLocal)] = true
		case strings.HasPrefix(ch, iptEndpointSEP):
			r.endpoints++
			if endpoints {
				r.endpointKeys = append(r.endpointKeys, strings.TrimPrefix(ch, iptEndpointSEP))
			}
		}
	}
	if !seen {
		return nil, absentError(iptServices + " chain in table ip " + iptNATTable + " (kube-proxy iptables mode on iptables-nft)")
	}
	r.services = len(ports)
	for h := range ports {
		r.keys = append(r.keys, h)
	}
	return r, nil
}
