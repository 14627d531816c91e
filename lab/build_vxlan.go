package lab

import (
	"fmt"
	"net"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/cnibench/cnibench/internal/kfeature"
)

// buildVXLAN creates node i's VXLAN device and its address, and for every
// other node the FDB entry, the permanent neighbour and the onlink route to
// its pod CIDR (see the package comment). h is bound to node i's namespace.
func (l *Lab) buildVXLAN(h *netlink.Handle, i int, eth0 netlink.Link) error {
	return l.buildVXLANOver(h, i, eth0, func(n Node) string { return n.IP })
}

// buildVXLANOver is buildVXLAN with the overlay's packets carried by dev
// (lower) between the addresses underlay gives each node (the nodes' IPs on eth0,
// or their WireGuard addresses when encrypted).
func (l *Lab) buildVXLANOver(h *netlink.Handle, i int, lower netlink.Link, underlay func(Node) string) error {
	n := l.Nodes[i]
	mac, err := net.ParseMAC(n.VTEPMAC)
	if err != nil {
		return fmt.Errorf("%s: %w", VXLANDev, err)
	}
	vx := &netlink.Vxlan{
		LinkAttrs:    netlink.LinkAttrs{Name: VXLANDev, MTU: l.MTU, HardwareAddr: mac},
		VxlanId:      VXLANVNI,
		VtepDevIndex: lower.Attrs().Index,
		SrcAddr:      net.ParseIP(underlay(n)).To4(),
		Port:         VXLANPort,
		Learning:     false,
	}
	if err := linkAdd(h, vx, "VXLAN links"); err != nil {
		return fmt.Errorf("create %s: %w", VXLANDev, err)
	}
	dev, err := h.LinkByName(VXLANDev)
	if err != nil {
		return fmt.Errorf("%s: %w", VXLANDev, err)
	}
	self := net.ParseIP(n.VTEP).To4()
	if err := h.AddrAdd(dev, &netlink.Addr{IPNet: &net.IPNet{IP: self, Mask: net.CIDRMask(32, 32)}}); err != nil {
		return fmt.Errorf("%s: address %s/32: %w", VXLANDev, n.VTEP, err)
	}
	if err := h.LinkSetUp(dev); err != nil {
		return fmt.Errorf("%s up: %w", VXLANDev, err)
	}
	idx := dev.Attrs().Index
	for _, r := range l.peerRoutes(i) {
		peer := r.Peer
		pmac, err := net.ParseMAC(peer.VTEPMAC)
		if err != nil {
			return fmt.Errorf("%s: peer %s: %w", VXLANDev, peer.Name, err)
		}
		pvtep := net.ParseIP(r.Via).To4()
		fdb := &netlink.Neigh{
			LinkIndex:    idx,
			Family:       unix.AF_BRIDGE,
			State:        netlink.NUD_PERMANENT,
			Flags:        netlink.NTF_SELF,
			IP:           net.ParseIP(underlay(peer)).To4(),
			HardwareAddr: pmac,
		}
		if err := h.NeighSet(fdb); err != nil {
			return fmt.Errorf("%s: fdb %s dst %s: %w", VXLANDev, peer.VTEPMAC, underlay(peer), err)
		}
		arp := &netlink.Neigh{
			LinkIndex:    idx,
			Family:       netlink.FAMILY_V4,
			State:        netlink.NUD_PERMANENT,
			IP:           pvtep,
			HardwareAddr: pmac,
		}
		if err := h.NeighSet(arp); err != nil {
			return fmt.Errorf("%s: neighbour %s lladdr %s: %w", VXLANDev, peer.VTEP, peer.VTEPMAC, err)
		}
		_, dst, _ := net.ParseCIDR(r.Dst)
		rt := &netlink.Route{LinkIndex: idx, Dst: dst, Gw: pvtep, Src: self, Flags: int(netlink.FLAG_ONLINK)}
		if err := h.RouteAdd(rt); err != nil {
			return fmt.Errorf("route %s via %s dev %s onlink: %w", r.Dst, r.Via, VXLANDev, err)
		}
	}
	return nil
}

// linkAdd creates link; a kernel without its kind (no module: the kernel
// answers EOPNOTSUPP) fails with a kfeature.Unsupported naming feature.
func linkAdd(h *netlink.Handle, link netlink.Link, feature string) error {
	return kfeature.Check(feature, h.LinkAdd(link))
}
