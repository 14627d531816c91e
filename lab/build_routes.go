package lab

import (
	"fmt"
	"net"

	"github.com/vishvananda/netlink"
)

// host32 is ip as a /32 destination.
func host32(ip string) *net.IPNet {
	return &net.IPNet{IP: net.ParseIP(ip).To4(), Mask: net.CIDRMask(32, 32)}
}

// nativeRoutes adds node i's routes to the other nodes' pod CIDRs via
// their node IPs on eth0 (routing "native"). h is bound to node i.
func (l *Lab) nativeRoutes(h *netlink.Handle, i int, eth0 netlink.Link) error {
	n := l.Nodes[i]
	for _, r := range l.peerRoutes(i) {
		_, dst, _ := net.ParseCIDR(r.Dst)
		if err := h.RouteAdd(&netlink.Route{LinkIndex: eth0.Attrs().Index, Dst: dst, Gw: net.ParseIP(r.Via).To4()}); err != nil {
			return fmt.Errorf("%s: route %s via %s: %w", n.Name, r.Dst, r.Via, err)
		}
	}
	return nil
}
