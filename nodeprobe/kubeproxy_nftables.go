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
// endpoints), Endpoints the endpoint-* chains.
func readKubeProxyNFT(c nftLister, chains []string) (*reading, error) {
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
	return r, nil
}
