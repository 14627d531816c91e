package nodeprobe

import (
	"fmt"
	"strings"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
)

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
// the KUBE-SEP-* chains. With endpointsOf, the endpoint keys of those
// Service ports (liveSEPs).
func readKubeProxyIPT(c nftLister, chains []string, endpointsOf []string) (*reading, error) {
	r := &reading{datapath: KubeProxyIPTables}
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
		}
	}
	if !seen {
		return nil, absentError(iptServices + " chain in table ip " + iptNATTable + " (kube-proxy iptables mode on iptables-nft)")
	}
	r.services = len(ports)
	for h := range ports {
		r.keys = append(r.keys, h)
	}
	if len(endpointsOf) > 0 {
		var err error
		if r.endpointKeys, err = liveSEPs(c, chains, endpointsOf); err != nil {
			return nil, err
		}
		r.endpointKeysRead = true
	}
	return r, nil
}

// liveSEPs are the hashes of the KUBE-SEP chains the KUBE-SVC (or
// KUBE-SVL) chain of each Service port of endpointsOf jumps to: its live
// endpoints. A KUBE-SEP chain that is there is not enough: with more than
// 1,000 endpoints kube-proxy deletes stale chains only once per sync
// period. chains are table ip nat's.
func liveSEPs(c nftLister, chains []string, endpointsOf []string) ([]string, error) {
	table := &nftables.Table{Name: iptNATTable, Family: nftables.TableFamilyIPv4}
	have := make(map[string]bool, len(chains))
	for _, ch := range chains {
		have[ch] = true
	}
	var keys []string
	for _, ref := range endpointsOf {
		sp, ok := parsePortRef(ref)
		if !ok {
			return nil, fmt.Errorf("kube-proxy iptables: %q is not namespace/name:port/protocol", ref)
		}
		h := Key(KubeProxyIPTables, sp)
		for _, prefix := range []string{iptSvcCluster, iptSvcLocal} {
			if !have[prefix+h] {
				continue // no endpoints, or the other traffic policy
			}
			rules, err := c.GetRules(table, &nftables.Chain{Name: prefix + h, Table: table})
			if err != nil {
				return nil, fmt.Errorf("kube-proxy iptables: reading the rules of chain %s: %w", prefix+h, err)
			}
			for _, rule := range rules {
				for _, e := range rule.Exprs {
					if v, ok := e.(*expr.Verdict); ok && (v.Kind == expr.VerdictJump || v.Kind == expr.VerdictGoto) && strings.HasPrefix(v.Chain, iptEndpointSEP) {
						keys = append(keys, strings.TrimPrefix(v.Chain, iptEndpointSEP))
					}
				}
			}
		}
	}
	return keys, nil
}
