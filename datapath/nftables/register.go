package nftables

import "github.com/cnibench/cnibench/datapath"

// Variants are the registry entries of kube-proxy's nftables layout and
// the flat one: one instance per lab node, dropping traffic to unallocated
// addresses of the lab's Service CIDR as kube-proxy does.
func Variants() []datapath.Variant {
	open := func(flat bool) func(datapath.Site) (datapath.Datapath, error) {
		return func(s datapath.Site) (datapath.Datapath, error) {
			return New(s.Netns, Options{Flat: flat, ClusterCIDR: s.ClusterCIDR, ServiceCIDR: datapath.ServiceCIDR.String()})
		}
	}
	return []datapath.Variant{
		{Name: NameKubeProxy, Short: "nft", Netfilter: true, Scope: datapath.PerNode, Open: open(false)},
		{Name: NameFlat, Short: "nftf", Netfilter: true, Scope: datapath.PerNode, Open: open(true)},
	}
}
