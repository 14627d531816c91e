package lab

import (
	"fmt"
	"net"

	"github.com/cnibench/cnibench/internal/netnsx"
	"github.com/vishvananda/netlink"
)

// pod builds pod p, number j of the node open in nc: its namespace, a veth
// from hostIf(j) in the node to eth0 in the pod, the pod's address and
// routes, and the node's /32 route to the pod.
func (b *builder) pod(nc *nsCtx, p Pod, j int) error {
	l := b.l
	pc, err := b.openNamespace(p.Netns, kindPod)
	if err != nil {
		return err
	}
	hostIf := hostIf(j)
	veth := &netlink.Veth{
		LinkAttrs:     netlink.LinkAttrs{Name: hostIf, MTU: l.MTU},
		PeerName:      "eth0",
		PeerMTU:       uint32(l.MTU),
		PeerNamespace: netlink.NsFd(int(pc.fd)),
	}
	if err := nc.h.LinkAdd(veth); err != nil {
		return fmt.Errorf("%s: veth: %w", p.Name, err)
	}
	if err := podEth0(pc.h, p); err != nil {
		return fmt.Errorf("%s: eth0: %w", p.Name, err)
	}
	he, err := nc.h.LinkByName(hostIf)
	if err == nil {
		err = nc.h.LinkSetUp(he)
	}
	if err == nil {
		err = nc.h.RouteAdd(&netlink.Route{LinkIndex: he.Attrs().Index, Dst: host32(p.IP), Scope: netlink.SCOPE_LINK})
	}
	if err != nil {
		return fmt.Errorf("%s: %s: %w", p.Name, hostIf, err)
	}
	b.done(pc)
	return nil
}

// podEth0 gives pod p's eth0 (h is bound to the pod) its /32 address, sets
// it up and adds its two routes: 169.254.1.1 scope link and the lab range
// via 169.254.1.1.
func podEth0(h *netlink.Handle, p Pod) error {
	gw := net.ParseIP(GatewayIP).To4()
	_, labNet, _ := net.ParseCIDR(LabRange)
	pe, err := h.LinkByName("eth0")
	if err == nil {
		err = h.AddrAdd(pe, &netlink.Addr{IPNet: host32(p.IP)})
	}
	if err == nil {
		err = h.LinkSetUp(pe)
	}
	if err == nil {
		err = h.RouteAdd(&netlink.Route{LinkIndex: pe.Attrs().Index, Dst: host32(GatewayIP), Scope: netlink.SCOPE_LINK})
	}
	if err == nil {
		err = h.RouteAdd(&netlink.Route{LinkIndex: pe.Attrs().Index, Dst: labNet, Gw: gw})
	}
	return err
}

// proxyARP turns on proxy ARP, answering at once, on node n's host ends
// of its pods' veths.
func proxyARP(n Node, hostIfs []string) error {
	err := netnsx.Do(netnsx.Path(n.Netns), func() error {
		for _, ifn := range hostIfs {
			// proxy_delay=0: otherwise the kernel delays each proxy ARP
			// reply to a broadcast request by up to 0.8 s (as Calico does).
			if err := netnsx.WriteSysctl("net/ipv4/conf/"+ifn+"/proxy_arp", "1"); err != nil {
				return err
			}
			if err := netnsx.WriteSysctl("net/ipv4/neigh/"+ifn+"/proxy_delay", "0"); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("%s: proxy_arp: %w", n.Name, err)
	}
	return nil
}
