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
// the KUBE-SEP-* chains. Live, the Services are those KUBE-SERVICES jumps
// to (liveServices); with q.EndpointsOf, the endpoint keys of those
// Service ports too (liveSEPs).
func readKubeProxyIPT(c nftLister, chains []string, q Query) (*reading, error) {
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
	if q.Live {
		live, err := liveServices(c)
		if err != nil {
			return nil, err
		}
		r.keys, r.services = live, len(live)
	}
	if len(q.EndpointsOf) > 0 {
		var err error
		if r.endpointKeys, err = liveSEPs(c, chains, q.EndpointsOf); err != nil {
			return nil, err
		}
		r.endpointKeysRead = true
	}
	return r, nil
}

// liveServices are the hashes of the KUBE-SVC (or KUBE-SVL) chains
// KUBE-SERVICES jumps to: the Service ports kube-proxy serves now. Above
// 1,000 endpoints it deletes a removed Service's chains only once per sync
// period, so a chain being there does not say the Service is.
func liveServices(c nftLister) ([]string, error) {
	table := &nftables.Table{Name: iptNATTable, Family: nftables.TableFamilyIPv4}
	rules, err := c.GetRules(table, &nftables.Chain{Name: iptServices, Table: table})
	if err != nil {
		return nil, fmt.Errorf("kube-proxy iptables: reading the rules of chain %s: %w", iptServices, err)
	}
	seen := map[string]bool{}
	var keys []string
	for _, t := range jumpTargets(rules) {
		for _, prefix := range []string{iptSvcCluster, iptSvcLocal} {
			if h, ok := strings.CutPrefix(t, prefix); ok && !seen[h] {
				seen[h] = true
				keys = append(keys, h)
			}
		}
	}
	return keys, nil
}

// jumpTargets are the chains rules jump or go to.
func jumpTargets(rules []*nftables.Rule) []string {
	var out []string
	for _, rule := range rules {
		for _, e := range rule.Exprs {
			if v, ok := e.(*expr.Verdict); ok && (v.Kind == expr.VerdictJump || v.Kind == expr.VerdictGoto) {
				out = append(out, v.Chain)
			}
		}
	}
	return out
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
			for _, t := range jumpTargets(rules) {
				if h, ok := strings.CutPrefix(t, iptEndpointSEP); ok {
					keys = append(keys, h)
				}
			}
		}
	}
	return keys, nil
}
