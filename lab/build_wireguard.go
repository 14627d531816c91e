package lab

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"path/filepath"

	"github.com/vishvananda/netlink"

	"github.com/cnibench/cnibench/internal/netnsx"
	"github.com/cnibench/cnibench/lab/wireguard"
)

// wgMTU is the WireGuard devices' MTU: the underlay's less WireGuard's
// overhead (a VXLAN overlay above it loses 50 more, Lab.MTU).
const wgMTU = MTU - wireguard.Overhead

// wireguard gives every node a WireGuard device with a peer per other
// node (its pod range and device address allowed), its address and the
// routes to the other nodes' pods through it, or, under vxlan, the VXLAN
// device on top of it: pod traffic between nodes leaves a node only
// encrypted, in UDP to the peer's node address on port 51820.
func (b *builder) wireguard(ctx context.Context) error {
	l := b.l
	keys := make([]wireguard.Key, len(l.Nodes))
	pubs := make([]wireguard.Key, len(l.Nodes))
	for i := range l.Nodes {
		var err error
		if keys[i], err = wireguard.NewPrivateKey(); err == nil {
			pubs[i], err = keys[i].Public()
		}
		if err != nil {
			return err
		}
		l.Nodes[i].WireGuard.PublicKey = pubs[i].Hex()
	}
	dir := filepath.Join(l.Config.StateDir, l.Config.Name)
	for i := range l.Nodes {
		if err := ctx.Err(); err != nil {
			return err
		}
		n := &l.Nodes[i]
		cfg := wireguard.NodeConfig{Node: n.Name, PrivateKey: keys[i], MTU: wgMTU}
		for j, p := range l.Nodes {
			if j == i {
				continue
			}
			cfg.Peers = append(cfg.Peers, wireguard.Peer{Name: p.Name, PublicKey: pubs[j],
				Endpoint:   netip.AddrPortFrom(netip.MustParseAddr(p.IP), wireguard.Port),
				AllowedIPs: []netip.Prefix{netip.MustParsePrefix(p.PodCIDR), netip.MustParsePrefix(p.WireGuard.Addr + "/32")}})
		}
		pid, err := wireguard.Start(ctx, netnsx.Path(n.Netns), n.WireGuard.Cgroup, dir, cfg)
		if err != nil {
			return fmt.Errorf("%s: %w", n.Name, err)
		}
		n.WireGuard.PID = pid
		if err := l.wireguardRoutes(i); err != nil {
			return fmt.Errorf("%s: %w", n.Name, err)
		}
	}
	return nil
}

// wireguardRoutes addresses node i's WireGuard device and routes the
// other nodes' pods through it (or puts the VXLAN device on it).
func (l *Lab) wireguardRoutes(i int) error {
	n := l.Nodes[i]
	h, err := netnsx.NewHandle(netnsx.Path(n.Netns))
	if err != nil {
		return err
	}
	defer h.Close()
	wg, err := h.LinkByName(wireguard.Device)
	if err == nil {
		err = h.AddrAdd(wg, &netlink.Addr{IPNet: &net.IPNet{IP: net.ParseIP(n.WireGuard.Addr).To4(), Mask: net.CIDRMask(24, 32)}})
	}
	if err == nil {
		err = h.LinkSetUp(wg)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", wireguard.Device, err)
	}
	if l.Routing == RoutingVXLAN {
		return l.buildVXLANOver(h, i, wg, func(p Node) string { return p.WireGuard.Addr })
	}
	for _, r := range l.peerRoutes(i) {
		_, dst, _ := net.ParseCIDR(r.Dst)
		if err := h.RouteAdd(&netlink.Route{LinkIndex: wg.Attrs().Index, Dst: dst, Scope: netlink.SCOPE_LINK}); err != nil {
			return fmt.Errorf("route %s dev %s: %w", r.Dst, wireguard.Device, err)
		}
	}
	return nil
}
