package tuning

import (
	"net/netip"

	"github.com/cnibench/cnibench/internal/netnsx"
	"github.com/cnibench/cnibench/lab"
)

// LabSites are a lab's namespaces as tuning sites: the underlay first
// (an MTU rises there before the nodes send more), then each node and its
// pods, all with the lab's pod ranges and the bytes the overlay and
// encryption take from the pods' MTU.
func LabSites(l *lab.Lab) []Site {
	var pods []netip.Prefix
	for _, n := range l.Nodes {
		if p, err := netip.ParsePrefix(n.PodCIDR); err == nil {
			pods = append(pods, p)
		}
	}
	overhead := lab.MTU - l.MTU
	sites := []Site{{Netns: netnsx.Path(l.Underlay), Name: "underlay", Underlay: true, Prefix: l.Prefix, Overhead: overhead}}
	for _, n := range l.Nodes {
		sites = append(sites, Site{Netns: netnsx.Path(n.Netns), Name: n.Name, Node: true, Prefix: l.Prefix, PodCIDRs: pods, Overhead: overhead})
		for _, p := range n.Pods {
			sites = append(sites, Site{Netns: netnsx.Path(p.Netns), Name: p.Name, Prefix: l.Prefix, PodCIDRs: pods, Overhead: overhead})
		}
	}
	return sites
}
