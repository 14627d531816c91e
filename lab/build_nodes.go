package lab

import (
	"fmt"
	"net"

	"github.com/vishvananda/netlink"
)

// underlay opens the underlay namespace and creates its bridge, up.
func (b *builder) underlay() error {
	under, err := b.openNamespace(b.l.Underlay, kindUnderlay)
	if err != nil {
		return err
	}
	b.under = under
	br := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: UnderlayBr, MTU: MTU}}
	if err := under.h.LinkAdd(br); err != nil {
		return fmt.Errorf("underlay bridge: %w", err)
	}
	brLink, err := under.h.LinkByName(UnderlayBr)
	if err == nil {
		err = under.h.LinkSetUp(brLink)
	}
	if err != nil {
		return fmt.Errorf("underlay bridge: %w", err)
	}
	b.bridge = brLink
	return nil
}

// node builds node i: its namespace, its uplink, its routes to the other
// nodes' pod CIDRs (native or VXLAN), its pods, then proxy ARP on the
// pods' host ends.
func (b *builder) node(i int) error {
	l, n := b.l, b.l.Nodes[i]
	nc, err := b.openNamespace(n.Netns, kindNode)
	if err != nil {
		return err
	}
	eth0, err := b.uplink(nc, i)
	if err != nil {
		return err
	}
	// Routes to the other nodes' pod CIDRs. Encrypted, they go through
	// the WireGuard devices, made once every node is (build_wireguard.go).
	switch {
	case l.Config.Encryption != "":
	case l.Routing == RoutingVXLAN:
		if err := l.buildVXLAN(nc.h, i, eth0); err != nil {
			return fmt.Errorf("%s: %w", n.Name, err)
		}
	default:
		if err := l.nativeRoutes(nc.h, i, eth0); err != nil {
			return err
		}
	}
	var hostIfs []string
	for j, p := range n.Pods {
		if err := b.pod(nc, p, j); err != nil {
			return err
		}
		hostIfs = append(hostIfs, hostIf(j))
	}
	if err := proxyARP(n, hostIfs); err != nil {
		return err
	}
	b.done(nc)
	return nil
}

// uplink connects node i (namespace nc) to the underlay: a veth with eth0
// in the node and bridgePort(i) on the bridge, the node IP on eth0, and
// the gateway route. It returns eth0.
func (b *builder) uplink(nc *nsCtx, i int) (netlink.Link, error) {
	n, under := b.l.Nodes[i], b.under
	brPort := bridgePort(i)
	veth := &netlink.Veth{
		LinkAttrs:     netlink.LinkAttrs{Name: "eth0", MTU: MTU},
		PeerName:      brPort,
		PeerMTU:       MTU,
		PeerNamespace: netlink.NsFd(int(under.fd)),
	}
	if err := nc.h.LinkAdd(veth); err != nil {
		return nil, fmt.Errorf("%s: uplink veth: %w", n.Name, err)
	}
	port, err := under.h.LinkByName(brPort)
	if err == nil {
		err = under.h.LinkSetMasterByIndex(port, b.bridge.Attrs().Index)
	}
	if err == nil {
		err = under.h.LinkSetUp(port)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: bridge port %s: %w", n.Name, brPort, err)
	}
	eth0, err := nc.h.LinkByName("eth0")
	if err == nil {
		err = nc.h.AddrAdd(eth0, &netlink.Addr{IPNet: &net.IPNet{IP: net.ParseIP(n.IP).To4(), Mask: net.CIDRMask(24, 32)}})
	}
	if err == nil {
		err = nc.h.LinkSetUp(eth0)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: eth0: %w", n.Name, err)
	}
	// Proxy ARP only answers for a target the node has a unicast route
	// to through another device, and nodes have no default route: route
	// 169.254.1.1 to the uplink, as Calico's default route would. Packets
	// addressed to it (nobody sends any) die unanswered on the underlay.
	if err := nc.h.RouteAdd(&netlink.Route{LinkIndex: eth0.Attrs().Index, Dst: host32(GatewayIP), Scope: netlink.SCOPE_LINK}); err != nil {
		return nil, fmt.Errorf("%s: gateway route: %w", n.Name, err)
	}
	return eth0, nil
}
