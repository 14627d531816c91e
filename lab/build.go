package lab

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sort"

	"github.com/cnibench/cnibench/internal/netnsx"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// nsCtx is an open namespace during build.
type nsCtx struct {
	name string
	fd   netns.NsHandle
	h    *netlink.Handle
}

func (c *nsCtx) close() {
	if c.h != nil {
		c.h.Close()
	}
	if c.fd.IsOpen() {
		c.fd.Close()
	}
}

// build creates the namespaces, links, addresses and routes.
func (l *Lab) build(ctx context.Context) error {
	names := l.namespaces()
	if err := netnsx.CreateNamed(names, func(string) {}); err != nil {
		return err
	}
	keys := make([]string, 0, len(l.Config.Sysctls))
	for k := range l.Config.Sysctls {
		keys = append(keys, k)
	}
	sort.Strings(keys)

	open := map[string]*nsCtx{}
	defer func() {
		for _, c := range open {
			c.close()
		}
	}()
	// Per namespace, on a disposable thread inside it: sysctls, then a
	// netlink socket bound to it and lo up.
	prep := func(ns string, kind string) (*nsCtx, error) {
		c := &nsCtx{name: ns}
		open[ns] = c
		fd, err := netns.GetFromPath(netnsx.Path(ns))
		if err != nil {
			return nil, fmt.Errorf("open netns %s: %w", ns, err)
		}
		c.fd = fd
		err = netnsx.Do(netnsx.Path(ns), func() error {
			if kind != "underlay" {
				base := [][2]string{
					{"net.ipv4.conf.all.rp_filter", "0"},
					{"net.ipv4.conf.default.rp_filter", "0"},
				}
				if kind == "node" {
					base = append(base, [2]string{"net.ipv4.ip_forward", "1"})
				}
				for _, kv := range base {
					if err := netnsx.WriteSysctl(kv[0], kv[1]); err != nil {
						return err
					}
				}
				for _, k := range keys {
					v := l.Config.Sysctls[k]
					err := netnsx.WriteSysctl(k, v)
					switch {
					case errors.Is(err, netnsx.ErrNoSysctl):
						v = unsupportedSC
					case err != nil:
						return err
					}
					if _, seen := l.Sysctls[k]; !seen || v == unsupportedSC {
						l.Sysctls[k] = v
					}
				}
			}
			h, err := netlink.NewHandle(unix.NETLINK_ROUTE)
			if err != nil {
				return fmt.Errorf("netlink: %w", err)
			}
			c.h = h
			lo, err := h.LinkByName("lo")
			if err == nil {
				err = h.LinkSetUp(lo)
			}
			if err != nil {
				return fmt.Errorf("lo up: %w", err)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("netns %s: %w", ns, err)
		}
		return c, nil
	}

	under, err := prep(l.Underlay, "underlay")
	if err != nil {
		return err
	}
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

	gw := net.ParseIP(GatewayIP).To4()
	_, labNet, _ := net.ParseCIDR(LabRange)
	host32 := func(ip string) *net.IPNet {
		return &net.IPNet{IP: net.ParseIP(ip).To4(), Mask: net.CIDRMask(32, 32)}
	}

	for i, n := range l.Nodes {
		if err := ctx.Err(); err != nil {
			return err
		}
		nc, err := prep(n.Netns, "node")
		if err != nil {
			return err
		}
		// Uplink: eth0 in the node, cnbn<i> on the underlay bridge.
		brPort := fmt.Sprintf("cnbn%d", i)
		veth := &netlink.Veth{
			LinkAttrs:     netlink.LinkAttrs{Name: "eth0", MTU: MTU},
			PeerName:      brPort,
			PeerMTU:       MTU,
			PeerNamespace: netlink.NsFd(int(under.fd)),
		}
		if err := nc.h.LinkAdd(veth); err != nil {
			return fmt.Errorf("%s: uplink veth: %w", n.Name, err)
		}
		port, err := under.h.LinkByName(brPort)
		if err == nil {
			err = under.h.LinkSetMasterByIndex(port, brLink.Attrs().Index)
		}
		if err == nil {
			err = under.h.LinkSetUp(port)
		}
		if err != nil {
			return fmt.Errorf("%s: bridge port %s: %w", n.Name, brPort, err)
		}
		eth0, err := nc.h.LinkByName("eth0")
		if err == nil {
			err = nc.h.AddrAdd(eth0, &netlink.Addr{IPNet: &net.IPNet{IP: net.ParseIP(n.IP).To4(), Mask: net.CIDRMask(24, 32)}})
		}
		if err == nil {
			err = nc.h.LinkSetUp(eth0)
		}
		if err != nil {
			return fmt.Errorf("%s: eth0: %w", n.Name, err)
		}
		// Proxy ARP only answers for a target the node has a unicast route
		// to through another device, and nodes have no default route: route
		// 169.254.1.1 to the uplink, as Calico's default route would. Packets
		// addressed to it (nobody sends any) die unanswered on the underlay.
		if err := nc.h.RouteAdd(&netlink.Route{LinkIndex: eth0.Attrs().Index, Dst: host32(GatewayIP), Scope: netlink.SCOPE_LINK}); err != nil {
			return fmt.Errorf("%s: gateway route: %w", n.Name, err)
		}
		// Routes to the other nodes' pod CIDRs.
		if l.Routing == RoutingVXLAN {
			if err := l.buildVXLAN(nc.h, i, eth0); err != nil {
				return fmt.Errorf("%s: %w", n.Name, err)
			}
		} else {
			for k, other := range l.Nodes {
				if k == i {
					continue
				}
				_, dst, _ := net.ParseCIDR(other.PodCIDR)
				if err := nc.h.RouteAdd(&netlink.Route{LinkIndex: eth0.Attrs().Index, Dst: dst, Gw: net.ParseIP(other.IP).To4()}); err != nil {
					return fmt.Errorf("%s: route %s via %s: %w", n.Name, other.PodCIDR, other.IP, err)
				}
			}
		}
		// Pods.
		var hostIfs []string
		for j, p := range n.Pods {
			pc, err := prep(p.Netns, "pod")
			if err != nil {
				return err
			}
			hostIf := fmt.Sprintf("cnbp%d", j)
			hostIfs = append(hostIfs, hostIf)
			veth := &netlink.Veth{
				LinkAttrs:     netlink.LinkAttrs{Name: hostIf, MTU: l.MTU},
				PeerName:      "eth0",
				PeerMTU:       uint32(l.MTU),
				PeerNamespace: netlink.NsFd(int(pc.fd)),
			}
			if err := nc.h.LinkAdd(veth); err != nil {
				return fmt.Errorf("%s: veth: %w", p.Name, err)
			}
			pe, err := pc.h.LinkByName("eth0")
			if err == nil {
				err = pc.h.AddrAdd(pe, &netlink.Addr{IPNet: host32(p.IP)})
			}
			if err == nil {
				err = pc.h.LinkSetUp(pe)
			}
			if err == nil {
				err = pc.h.RouteAdd(&netlink.Route{LinkIndex: pe.Attrs().Index, Dst: host32(GatewayIP), Scope: netlink.SCOPE_LINK})
			}
			if err == nil {
				err = pc.h.RouteAdd(&netlink.Route{LinkIndex: pe.Attrs().Index, Dst: labNet, Gw: gw})
			}
			if err != nil {
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
			pc.close()
			delete(open, p.Netns)
		}
		err = netnsx.Do(netnsx.Path(n.Netns), func() error {
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
		nc.close()
		delete(open, n.Netns)
	}
	return nil
}
