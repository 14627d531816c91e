package nodeprobe

import (
	"fmt"
	"strings"

	"github.com/google/nftables"
)

// kube-proxy's nftables mode objects (pkg/proxy/nftables/proxier.go; the
// lab writes the same layout in datapath/nftables).
const (
	kpNFTTable      = "kube-proxy"  // table ip kube-proxy
	kpServiceIPsMap = "service-ips" // ClusterIP . proto . port : goto service-<hash>-...
	kpEndpointChain = "endpoint-"   // one chain per endpoint of a Service port
)

// readKubeProxyNFT counts kube-proxy's nftables mode given the chains of
// its table: Services are the elements of the service-ips map (ClusterIP,
// external and load-balancer IP frontends of Service ports with
// endpoints), Endpoints the endpoint-* chains. With endpointsOf, the
// endpoint keys of those Services (see liveEndpoints).
func readKubeProxyNFT(c nftLister, chains []string, endpointsOf []string) (*reading, error) {
	if len(chains) == 0 {
		return nil, absentError("table ip " + kpNFTTable + " (kube-proxy nftables mode)")
	}
	r := &reading{datapath: KubeProxyNFTables}
	for _, ch := range chains {
		if strings.HasPrefix(ch, kpEndpointChain) {
			r.endpoints++
		}
	}
	set := &nftables.Set{Name: kpServiceIPsMap, IsMap: true,
		Table: &nftables.Table{Name: kpNFTTable, Family: nftables.TableFamilyIPv4}}
	elems, err := c.GetSetElements(set)
	if err != nil {
		return nil, fmt.Errorf("kube-proxy nftables: reading map %s of table ip %s: %w", kpServiceIPsMap, kpNFTTable, err)
	}
	for _, e := range elems {
		if !e.IntervalEnd {
			r.services++
			if k, ok := nftServiceKey(e.Key); ok {
				r.keys = append(r.keys, k)
			}
		}
	}
	if len(endpointsOf) > 0 {
		if r.endpointKeys, err = liveEndpoints(c, chains, endpointsOf); err != nil {
			return nil, err
		}
		r.endpointKeysRead = true
	}
	return r, nil
}

// liveEndpoints are the keys of the endpoint chains of the Service ports
// endpointsOf (PortRef) that have rules. kube-proxy flushes an
// endpoint chain in the transaction that stops using it and deletes it
// only in a sync a second or more later (kernels before 6.2 noticed the
// last reference go late), so a chain that is there is not yet a live
// endpoint; an empty one is stale. Its rules are read only for those
// Services: a chain is "endpoint-<hash>-namespace/name/proto/port__ip/port".
func liveEndpoints(c nftLister, chains, endpointsOf []string) ([]string, error) {
	asked := map[string]bool{}
	for _, ref := range endpointsOf {
		sp, ok := parsePortRef(ref)
		if !ok {
			return nil, fmt.Errorf("kube-proxy nftables: %q is not namespace/name:port/protocol", ref)
		}
		asked[sp.Namespace+"/"+sp.Name+"/"+sp.Protocol+"/"+sp.PortName] = true
	}
	table := &nftables.Table{Name: kpNFTTable, Family: nftables.TableFamilyIPv4}
	var keys []string
	for _, ch := range chains {
		rest, ok := strings.CutPrefix(ch, kpEndpointChain)
		if !ok || len(rest) < 10 || rest[8] != '-' {
			continue
		}
		port, _, _ := strings.Cut(rest[9:], "__")
		if !asked[port] {
			continue
		}
		rules, err := c.GetRules(table, &nftables.Chain{Name: ch, Table: table})
		if err != nil {
			return nil, fmt.Errorf("kube-proxy nftables: reading the rules of chain %s: %w", ch, err)
		}
		if len(rules) > 0 {
			keys = append(keys, rest[:8])
		}
	}
	return keys, nil
}
