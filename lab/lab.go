// Package lab builds and tears down a "local lab": a multi-node
// Kubernetes-like network made of Linux network namespaces on one machine.
//
// Topology (routed veth model of Cilium/Calico, addresses from the RFC 2544
// benchmarking range 198.18.0.0/15):
//
//   - namespace cnb-<name>-underlay holds bridge cnbbr0 (the "VPC");
//   - node i (cnb-<name>-node<i>) has eth0 = 198.18.0.(10+i)/24 on a veth
//     whose other end, cnbn<i>, is a port of the bridge;
//   - pod j of node i (cnb-<name>-node<i>-pod<j>) has eth0 = 198.19.i.(10+j)/32
//     with routes "169.254.1.1 dev eth0 scope link" and
//     "198.18.0.0/15 via 169.254.1.1"; the node end of its veth, cnbp<j>, has
//     proxy_arp=1 and the node has a /32 route to the pod;
//   - routing "native" (default): node i routes 198.19.j.0/24 via
//     198.18.0.(10+j) on eth0; every MTU is 1500;
//   - routing "vxlan" (overlay, like Flannel's vxlan backend and Cilium's
//     tunnel mode): see below.
//
// VXLAN overlay. Each node has a VXLAN device cnb_vxlan: VNI 1 (Flannel's
// default; Cilium puts the source security identity in the VNI, which a lab
// has no use for), UDP destination port 8472 (the Linux default, used by
// Flannel and Cilium; IANA's 4789 would behave the same), local address =
// the node IP, lower device eth0, no multicast group, learning off. Its MAC
// is fixed, 02:cb:00:00:00:<i>, and its address, the VTEP IP, is
// 198.19.i.0/32, the first address of the node's pod CIDR (as Flannel gives
// flannel.1 the .0 of the node's subnet; Cilium gives cilium_host an address
// of the pod CIDR too). For every peer j, node i has
//
//	198.19.j.0/24 via 198.19.j.0 dev cnb_vxlan onlink src 198.19.i.0
//	neigh 198.19.j.0 lladdr 02:cb:00:00:00:<j> dev cnb_vxlan PERMANENT
//	fdb 02:cb:00:00:00:<j> dev cnb_vxlan dst 198.18.0.(10+j) self permanent
//
// exactly Flannel's scheme: routes need no ARP across the overlay, and each
// frame goes to exactly one peer. There are no all-zeros (BUM) FDB entries:
// nothing needs broadcast or multicast, and without them a frame for an
// unknown MAC is dropped instead of being replicated to every peer (the
// tests check that a third node's cnb_vxlan sees none of a pair's traffic).
//
// What is tunnelled: traffic to another node's pod CIDR, i.e. pod to remote
// pod (source IP preserved) and node to remote pod (source = the node's VTEP
// IP, as with Flannel and Cilium, so the replies come back through the
// tunnel too). Traffic to a node IP is not: node to node stays on the
// underlay (as with Cilium, host traffic is not tunnelled), and so does pod
// to remote node, whose replies come back through the tunnel.
//
// MTU in vxlan mode: eth0 and the underlay stay at 1500; cnb_vxlan and both
// ends of every pod veth are 1450 (1500 minus 50 bytes of outer IPv4, UDP,
// VXLAN and Ethernet headers), so pods never send packets that would need
// fragmenting; Lab.MTU records the pod MTU.
//
// Nothing has a default route, and nothing is ever created in, or moved
// through, the host's root network namespace.
package lab

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/cnibench/cnibench/internal/netnsx"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// Addressing and naming constants of the lab topology.
const (
	LabRange      = "198.18.0.0/15" // everything routable in a lab
	GatewayIP     = "169.254.1.1"   // pods' next hop, answered by proxy ARP
	UnderlayBr    = "cnbbr0"        // bridge in the underlay namespace
	MTU           = 1500            // underlay MTU, and pod MTU with native routing
	RoutingNative = "native"        // Config.Routing: plain routing over the underlay
	RoutingVXLAN  = "vxlan"         // Config.Routing: VXLAN overlay between nodes
	VXLANDev      = "cnb_vxlan"
	VXLANVNI      = 1
	VXLANPort     = 8472
	VXLANOverhead = 50 // outer IPv4 (20) + UDP (8) + VXLAN (8) + inner Ethernet (14)
	VXLANMTU      = MTU - VXLANOverhead

	stateFile     = "state.json"
	creatingFile  = "creating"
	killTimeout   = 3 * time.Second
	rmdirTimeout  = 3 * time.Second
	unsupportedSC = "unsupported"
)

// ErrNotFound is wrapped by Load when a lab has no state file.
var ErrNotFound = errors.New("lab not found")

// Lab is a created lab, as saved in <StateDir>/<name>/state.json.
type Lab struct {
	Config     Config            `json:"config"`
	Prefix     string            `json:"prefix"`   // "cnb-<name>-"
	Underlay   string            `json:"underlay"` // netns name of the underlay bridge namespace
	Nodes      []Node            `json:"nodes"`
	Routing    string            `json:"routing"`     // "native" | "vxlan"
	MTU        int               `json:"mtu"`         // pod MTU: 1500 native, 1450 vxlan
	CgroupRoot string            `json:"cgroup_root"` // cgroup v2 dir of this lab, "" if cgroup v2 unavailable
	Sysctls    map[string]string `json:"sysctls"`     // applied value, or "unsupported"
	Created    time.Time         `json:"created"`
}

// Node is one node namespace.
type Node struct {
	Name    string `json:"name"`               // "node0"
	Netns   string `json:"netns"`              // "cnb-<lab>-node0"
	IP      string `json:"ip"`                 // "198.18.0.10"
	PodCIDR string `json:"pod_cidr"`           // "198.19.0.0/24"
	Cgroup  string `json:"cgroup"`             // cgroup v2 dir, "" without cgroup v2
	VTEP    string `json:"vtep,omitempty"`     // vxlan: address of cnb_vxlan, "198.19.0.0"
	VTEPMAC string `json:"vtep_mac,omitempty"` // vxlan: MAC of cnb_vxlan, "02:cb:00:00:00:00"
	Pods    []Pod  `json:"pods"`
}

// Pod is one pod namespace.
type Pod struct {
	Name   string `json:"name"`   // "node0-pod1"
	Node   string `json:"node"`   // "node0"
	Netns  string `json:"netns"`  // "cnb-<lab>-node0-pod1"
	IP     string `json:"ip"`     // "198.19.0.11"
	Cgroup string `json:"cgroup"` // cgroup v2 dir, "" without cgroup v2
}

// Endpoint is a node or a pod, where commands can be started.
type Endpoint struct {
	Name   string `json:"name"`
	Kind   string `json:"kind"` // "node" | "pod"
	Node   string `json:"node"`
	Netns  string `json:"netns"`
	IP     string `json:"ip"`
	Cgroup string `json:"cgroup"`
}

// NetnsPath is the bind-mount path of the endpoint's namespace.
func (e Endpoint) NetnsPath() string { return netnsx.Path(e.Netns) }

// RequirePrivileges checks for root with CAP_NET_ADMIN and CAP_SYS_ADMIN.
func RequirePrivileges() error {
	const msg = "lab needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN): run as root"
	if os.Geteuid() != 0 {
		return errors.New(msg)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return errors.New(msg)
	}
	eff := uint64(data[0].Effective) | uint64(data[1].Effective)<<32
	for _, c := range []uint{unix.CAP_NET_ADMIN, unix.CAP_SYS_ADMIN} {
		if eff&(1<<c) == 0 {
			return errors.New(msg)
		}
	}
	return nil
}

func nodeIP(i int) string     { return fmt.Sprintf("198.18.0.%d", 10+i) }
func podCIDR(i int) string    { return fmt.Sprintf("198.19.%d.0/24", i) }
func podIP(i, j int) string   { return fmt.Sprintf("198.19.%d.%d", i, 10+j) }
func vtepIP(i int) string     { return fmt.Sprintf("198.19.%d.0", i) }
func vtepMAC(i int) string    { return fmt.Sprintf("02:cb:00:00:00:%02x", i) }
func nodeName(i int) string   { return fmt.Sprintf("node%d", i) }
func podName(i, j int) string { return fmt.Sprintf("node%d-pod%d", i, j) }

// plan fills in the names and addresses of a lab for cfg (already validated).
func plan(cfg Config, cgroupRoot string) *Lab {
	p := Prefix(cfg.Name)
	if cfg.Routing == "" {
		cfg.Routing = RoutingNative
	}
	l := &Lab{
		Config:     cfg,
		Prefix:     p,
		Underlay:   p + "underlay",
		Routing:    cfg.Routing,
		MTU:        MTU,
		CgroupRoot: cgroupRoot,
		Sysctls:    map[string]string{},
	}
	if l.Routing == RoutingVXLAN {
		l.MTU = VXLANMTU
	}
	cg := func(n string) string {
		if cgroupRoot == "" {
			return ""
		}
		return filepath.Join(cgroupRoot, n)
	}
	for i := 0; i < cfg.Nodes; i++ {
		n := Node{Name: nodeName(i), Netns: p + nodeName(i), IP: nodeIP(i), PodCIDR: podCIDR(i), Cgroup: cg(nodeName(i))}
		if l.Routing == RoutingVXLAN {
			n.VTEP, n.VTEPMAC = vtepIP(i), vtepMAC(i)
		}
		for j := 0; j < cfg.PodsPerNode; j++ {
			n.Pods = append(n.Pods, Pod{Name: podName(i, j), Node: n.Name, Netns: p + podName(i, j), IP: podIP(i, j), Cgroup: cg(podName(i, j))})
		}
		l.Nodes = append(l.Nodes, n)
	}
	return l
}

// namespaces returns every namespace name of the lab, underlay first.
func (l *Lab) namespaces() []string {
	out := []string{l.Underlay}
	for _, n := range l.Nodes {
		out = append(out, n.Netns)
		for _, p := range n.Pods {
			out = append(out, p.Netns)
		}
	}
	return out
}

// exists reports leftovers of lab name: state dir, namespaces or cgroup.
func exists(stateDir, name string) string {
	if _, err := os.Stat(filepath.Join(stateDir, name)); err == nil {
		return "state dir " + filepath.Join(stateDir, name)
	}
	if ns, _ := netnsx.ListNamed(Prefix(name)); len(ns) > 0 {
		return "namespace " + netnsx.Path(ns[0])
	}
	if r := cgroupRootFor(name); r != "" {
		if _, err := os.Stat(r); err == nil {
			return "cgroup " + r
		}
	}
	return ""
}

// Up creates a lab. It fails if a lab of that name (or any leftover of one)
// exists. On any failure it removes everything it made.
func Up(ctx context.Context, cfg Config) (_ *Lab, err error) {
	if err := RequirePrivileges(); err != nil {
		return nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	name := cfg.Name
	if what := exists(cfg.StateDir, name); what != "" {
		return nil, fmt.Errorf("lab %q already exists (%s): take it down first", name, what)
	}
	if err := os.MkdirAll(cfg.StateDir, 0o755); err != nil {
		return nil, fmt.Errorf("lab %q: state dir: %w", name, err)
	}
	dir := filepath.Join(cfg.StateDir, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		if errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("lab %q already exists (state dir %s): take it down first", name, dir)
		}
		return nil, fmt.Errorf("lab %q: state dir: %w", name, err)
	}
	// From here on we own the name: undo everything on failure.
	defer func() {
		if err != nil {
			if _, derr := Down(cfg.StateDir, name); derr != nil {
				err = fmt.Errorf("%w (cleanup also failed: %v)", err, derr)
			}
		}
	}()
	marker := fmt.Sprintf("pid %d at %s\n", os.Getpid(), time.Now().UTC().Format(time.RFC3339))
	if err := os.WriteFile(filepath.Join(dir, creatingFile), []byte(marker), 0o644); err != nil {
		return nil, fmt.Errorf("lab %q: %w", name, err)
	}

	cgroupRoot := cgroupRootFor(name)
	l := plan(cfg, cgroupRoot)
	if cgroupRoot != "" {
		if err := l.makeCgroups(); err != nil {
			return nil, fmt.Errorf("lab %q: %w", name, err)
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := l.build(ctx); err != nil {
		return nil, fmt.Errorf("lab %q: %w", name, err)
	}
	l.Created = time.Now().UTC()
	if err := l.save(); err != nil {
		return nil, fmt.Errorf("lab %q: %w", name, err)
	}
	os.Remove(filepath.Join(dir, creatingFile))
	return l, nil
}

func (l *Lab) makeCgroups() error {
	if err := os.Mkdir(l.CgroupRoot, 0o755); err != nil {
		return fmt.Errorf("create cgroup: %w", err)
	}
	for _, ep := range l.Endpoints() {
		if err := os.Mkdir(ep.Cgroup, 0o755); err != nil {
			return fmt.Errorf("create cgroup: %w", err)
		}
	}
	return nil
}

func (l *Lab) save() error {
	dir := filepath.Join(l.Config.StateDir, l.Config.Name)
	b, err := json.MarshalIndent(l, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, stateFile+".tmp*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(append(b, '\n'))
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), filepath.Join(dir, stateFile))
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write state: %w", err)
	}
	return nil
}

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

// buildVXLAN creates node i's VXLAN device and its address, and for every
// other node the FDB entry, the permanent neighbour and the onlink route to
// its pod CIDR (see the package comment). h is bound to node i's namespace.
func (l *Lab) buildVXLAN(h *netlink.Handle, i int, eth0 netlink.Link) error {
	n := l.Nodes[i]
	mac, err := net.ParseMAC(n.VTEPMAC)
	if err != nil {
		return fmt.Errorf("%s: %w", VXLANDev, err)
	}
	vx := &netlink.Vxlan{
		LinkAttrs:    netlink.LinkAttrs{Name: VXLANDev, MTU: VXLANMTU, HardwareAddr: mac},
		VxlanId:      VXLANVNI,
		VtepDevIndex: eth0.Attrs().Index,
		SrcAddr:      net.ParseIP(n.IP).To4(),
		Port:         VXLANPort,
		Learning:     false,
	}
	if err := h.LinkAdd(vx); err != nil {
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
	for k, peer := range l.Nodes {
		if k == i {
			continue
		}
		pmac, err := net.ParseMAC(peer.VTEPMAC)
		if err != nil {
			return fmt.Errorf("%s: peer %s: %w", VXLANDev, peer.Name, err)
		}
		pvtep := net.ParseIP(peer.VTEP).To4()
		fdb := &netlink.Neigh{
			LinkIndex:    idx,
			Family:       unix.AF_BRIDGE,
			State:        netlink.NUD_PERMANENT,
			Flags:        netlink.NTF_SELF,
			IP:           net.ParseIP(peer.IP).To4(),
			HardwareAddr: pmac,
		}
		if err := h.NeighSet(fdb); err != nil {
			return fmt.Errorf("%s: fdb %s dst %s: %w", VXLANDev, peer.VTEPMAC, peer.IP, err)
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
		_, dst, _ := net.ParseCIDR(peer.PodCIDR)
		rt := &netlink.Route{LinkIndex: idx, Dst: dst, Gw: pvtep, Src: self, Flags: int(netlink.FLAG_ONLINK)}
		if err := h.RouteAdd(rt); err != nil {
			return fmt.Errorf("route %s via %s dev %s onlink: %w", peer.PodCIDR, peer.VTEP, VXLANDev, err)
		}
	}
	return nil
}

// Load reads <stateDir>/<name>/state.json. A missing file wraps ErrNotFound.
func Load(stateDir, name string) (*Lab, error) {
	if stateDir == "" {
		stateDir = DefaultStateDir
	}
	if err := ValidName(name); err != nil {
		return nil, err
	}
	p := filepath.Join(stateDir, name, stateFile)
	b, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		if _, cerr := os.Stat(filepath.Join(stateDir, name, creatingFile)); cerr == nil {
			return nil, fmt.Errorf("lab %q: %w (creation did not finish; take it down to clean up)", name, ErrNotFound)
		}
		return nil, fmt.Errorf("lab %q: %w (no %s)", name, ErrNotFound, p)
	}
	if err != nil {
		return nil, fmt.Errorf("lab %q: %w", name, err)
	}
	var l Lab
	if err := json.Unmarshal(b, &l); err != nil {
		return nil, fmt.Errorf("lab %q: corrupt state file %s: %v", name, p, err)
	}
	if l.Config.Name != name || l.Prefix != Prefix(name) {
		return nil, fmt.Errorf("lab %q: state file %s describes lab %q", name, p, l.Config.Name)
	}
	l.Config.StateDir = stateDir
	return &l, nil
}

// Down removes lab name: it kills the lab's processes (by cgroup and by
// network namespace), deletes its namespaces, cgroups and state dir. It is
// idempotent and needs no state file: it finds objects by their prefix.
// removed lists what it removed or killed.
func Down(stateDir, name string) (removed []string, err error) {
	if err := RequirePrivileges(); err != nil {
		return nil, err
	}
	if err := ValidName(name); err != nil {
		return nil, err
	}
	if stateDir == "" {
		stateDir = DefaultStateDir
	}
	prefix := Prefix(name)
	var errs []error

	roots := map[string]bool{}
	if r := cgroupRootFor(name); r != "" {
		roots[r] = true
	}
	if l, lerr := Load(stateDir, name); lerr == nil && l.CgroupRoot != "" &&
		filepath.Base(l.CgroupRoot) == "cnb-"+name {
		roots[l.CgroupRoot] = true
	}

	// 1. Processes in the lab's cgroups.
	for r := range roots {
		k, kerr := killCgroup(r, killTimeout)
		removed = append(removed, k...)
		if kerr != nil {
			errs = append(errs, kerr)
		}
	}

	// 2. Processes in the lab's namespaces (started without a cgroup, or
	// entered from outside, e.g. by `ip netns exec`).
	names, lerr := netnsx.ListNamed(prefix)
	if lerr != nil {
		errs = append(errs, lerr)
	}
	ids := map[netnsx.ID]string{}
	for _, n := range names {
		if id, err := netnsx.IDOf(netnsx.Path(n)); err == nil {
			ids[id] = n
		}
	}
	pids, perr := netnsx.PidsIn(ids)
	if perr != nil {
		errs = append(errs, perr)
	}
	var victims []int
	for ns, ps := range pids {
		for _, pid := range ps {
			removed = append(removed, fmt.Sprintf("process %d (%s) in netns %s", pid, netnsx.Comm(pid), ns))
			unix.Kill(pid, unix.SIGKILL)
			victims = append(victims, pid)
		}
	}
	deadline := time.Now().Add(killTimeout)
	for _, pid := range victims {
		for netnsx.Alive(pid) && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if netnsx.Alive(pid) {
			errs = append(errs, fmt.Errorf("process %d did not exit after SIGKILL", pid))
		}
	}

	// 3. Namespaces: pods, then nodes, then the underlay.
	sort.Slice(names, func(i, j int) bool {
		if len(names[i]) != len(names[j]) {
			return len(names[i]) > len(names[j])
		}
		return names[i] < names[j]
	})
	for _, n := range names {
		if err := netnsx.DeleteNamed(n); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, "netns "+n)
	}

	// 4. Cgroups, deepest first.
	for r := range roots {
		rm, rerr := removeCgroups(r, rmdirTimeout)
		for _, d := range rm {
			removed = append(removed, "cgroup "+d)
		}
		if rerr != nil {
			errs = append(errs, rerr)
		}
	}

	// 5. State dir.
	dir := filepath.Join(stateDir, name)
	if _, err := os.Lstat(dir); err == nil {
		if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, err)
		} else {
			removed = append(removed, "state "+dir)
		}
	}
	if len(errs) > 0 {
		msgs := make([]string, len(errs))
		for i, e := range errs {
			msgs[i] = e.Error()
		}
		return removed, fmt.Errorf("lab %q down: %s", name, strings.Join(msgs, "; "))
	}
	return removed, nil
}

// List returns the names of labs found in stateDir or as leftover
// namespaces or cgroups, sorted.
func List(stateDir string) ([]string, error) {
	if stateDir == "" {
		stateDir = DefaultStateDir
	}
	set := map[string]bool{}
	ents, err := os.ReadDir(stateDir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	for _, e := range ents {
		if e.IsDir() && ValidName(e.Name()) == nil {
			set[e.Name()] = true
		}
	}
	fromPrefixed := func(s string) {
		rest, ok := strings.CutPrefix(s, "cnb-")
		if !ok {
			return
		}
		if i := strings.IndexByte(rest, '-'); i >= 0 {
			rest = rest[:i]
		}
		if ValidName(rest) == nil {
			set[rest] = true
		}
	}
	nss, err := netnsx.ListNamed("cnb-")
	if err != nil {
		return nil, err
	}
	for _, n := range nss {
		if strings.Count(n, "-") >= 2 {
			fromPrefixed(n)
		}
	}
	if m := cgroup2Mount(); m != "" {
		cg, _ := os.ReadDir(m)
		for _, e := range cg {
			if e.IsDir() && strings.Count(e.Name(), "-") == 1 {
				fromPrefixed(e.Name())
			}
		}
	}
	out := make([]string, 0, len(set))
	for n := range set {
		out = append(out, n)
	}
	sort.Strings(out)
	return out, nil
}
