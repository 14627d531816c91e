package iptables

import (
	"path/filepath"

	"github.com/cnibench/cnibench/datapath"
)

// Variants are the registry entries of kube-proxy's iptables layout, on
// iptables-nft and on iptables-legacy: one instance per lab node, each
// with its own xtables lock under the lab's state directory.
func Variants() []datapath.Variant {
	open := func(legacy bool) func(datapath.Site) (datapath.Datapath, error) {
		return func(s datapath.Site) (datapath.Datapath, error) {
			return New(s.Netns, Options{Legacy: legacy, ClusterCIDR: s.ClusterCIDR,
				LockFile: filepath.Join(s.StateDir, s.Node+".xtables.lock")})
		}
	}
	return []datapath.Variant{
		{Name: NameNFT, Short: "ipt", Netfilter: true, Scope: datapath.PerNode, Open: open(false)},
		{Name: NameLegacy, Short: "iptl", Netfilter: true, Scope: datapath.PerNode, Open: open(true)},
	}
}
