package lab

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/hosttest"
	"github.com/cnibench/cnibench/internal/netnsx"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// nsHandle returns a netlink handle in namespace ns, closed at cleanup.
func nsHandle(t *testing.T, ns string) *netlink.Handle {
	t.Helper()
	h, err := netnsx.NewHandle(netnsx.Path(ns))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	return h
}

func linkIn(t *testing.T, ns, name string) netlink.Link {
	t.Helper()
	l, err := nsHandle(t, ns).LinkByName(name)
	if err != nil {
		t.Fatalf("%s in %s: %v", name, ns, err)
	}
	return l
}

func TestVXLANConnectivity(t *testing.T) {
	l := newLab(t, Config{Nodes: 3, PodsPerNode: 2, Routing: RoutingVXLAN})
	if l.Routing != RoutingVXLAN || l.MTU != 1450 || l.Config.Routing != RoutingVXLAN {
		t.Errorf("Lab.Routing %q, Lab.MTU %d, Config.Routing %q; want vxlan, 1450, vxlan", l.Routing, l.MTU, l.Config.Routing)
	}
	for _, ep := range []string{"node1-pod1", "node1", "node2-pod0", "node0-pod0"} {
		listen(t, mustEP(t, l, ep), 8080)
	}
	// dial checks the echo and that the source address is the client's own.
	cases := []struct{ from, to string }{
		{"node0-pod0", "node1-pod1"}, // other node
		{"node2-pod1", "node1-pod1"}, // other node
		{"node1-pod1", "node2-pod0"}, // other node, reverse direction
		{"node1-pod0", "node1-pod1"}, // same node
		{"node0", "node1"},           // node to node: underlay
		{"node0-pod1", "node1"},      // pod to remote node
		{"node1", "node1-pod1"},      // node to local pod
	}
	for _, c := range cases {
		from, to := mustEP(t, l, c.from), mustEP(t, l, c.to)
		start := time.Now()
		if err := dial(from, net.JoinHostPort(to.IP, "8080"), 3*time.Second); err != nil {
			t.Errorf("%s -> %s (%s): %v", c.from, c.to, to.IP, err)
		}
		if d := time.Since(start); d > 300*time.Millisecond {
			t.Errorf("%s -> %s took %v", c.from, c.to, d)
		}
	}
	// Node to remote pod goes through the tunnel from the node's VTEP IP.
	for _, c := range []struct{ from, to, src string }{
		{"node0", "node2-pod0", "198.19.0.0"},
		{"node2", "node0-pod0", "198.19.2.0"},
	} {
		from := mustEP(t, l, c.from)
		from.IP = c.src
		if err := dial(from, net.JoinHostPort(mustEP(t, l, c.to).IP, "8080"), 3*time.Second); err != nil {
			t.Errorf("%s -> %s: %v", c.from, c.to, err)
		}
	}
	checkVXLANNode0(t, l)
	checkVXLANState(t, l)
}

// checkVXLANNode0 checks the devices, addresses, FDB, neighbours and routes
// of node0 of a 3-node vxlan lab.
func checkVXLANNode0(t *testing.T, l *Lab) {
	t.Helper()
	ns := l.Prefix + "node0"
	h := nsHandle(t, ns)
	link, err := h.LinkByName(VXLANDev)
	if err != nil {
		t.Fatal(err)
	}
	vx, ok := link.(*netlink.Vxlan)
	if !ok {
		t.Fatalf("%s is a %s, want vxlan", VXLANDev, link.Type())
	}
	if vx.VxlanId != 1 || vx.Port != 8472 || vx.Learning || !vx.SrcAddr.Equal(net.ParseIP("198.18.0.10")) ||
		vx.Group != nil && !vx.Group.IsUnspecified() || vx.MTU != 1450 || vx.HardwareAddr.String() != "02:cb:00:00:00:00" {
		t.Errorf("%s: vni %d port %d learning %v local %v group %v mtu %d mac %s", VXLANDev,
			vx.VxlanId, vx.Port, vx.Learning, vx.SrcAddr, vx.Group, vx.MTU, vx.HardwareAddr)
	}
	if eth0 := linkIn(t, ns, "eth0"); eth0.Attrs().MTU != 1500 {
		t.Errorf("node eth0 mtu %d, want 1500", eth0.Attrs().MTU)
	}
	fdb, err := h.NeighList(vx.Index, unix.AF_BRIDGE)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, n := range fdb {
		got = append(got, fmt.Sprintf("%s dst %s", n.HardwareAddr, n.IP))
		if n.State&netlink.NUD_PERMANENT == 0 {
			t.Errorf("fdb entry %s is not permanent (state %#x)", n.HardwareAddr, n.State)
		}
	}
	sort.Strings(got)
	if want := "02:cb:00:00:00:01 dst 198.18.0.11,02:cb:00:00:00:02 dst 198.18.0.12"; strings.Join(got, ",") != want {
		t.Errorf("fdb of %s: %v, want %s", VXLANDev, got, want)
	}
	neigh, err := h.NeighList(vx.Index, netlink.FAMILY_V4)
	if err != nil {
		t.Fatal(err)
	}
	got = got[:0]
	for _, n := range neigh {
		got = append(got, fmt.Sprintf("%s %s %v", n.IP, n.HardwareAddr, n.State == netlink.NUD_PERMANENT))
	}
	sort.Strings(got)
	if want := "198.19.1.0 02:cb:00:00:00:01 true,198.19.2.0 02:cb:00:00:00:02 true"; strings.Join(got, ",") != want {
		t.Errorf("neighbours of %s: %v, want %s", VXLANDev, got, want)
	}
	out, err := cmdOut("ip", "-n", ns, "-4", "route", "show", "dev", VXLANDev)
	if err != nil {
		t.Fatal(err)
	}
	want := "198.19.1.0/24 via 198.19.1.0 src 198.19.0.0 onlink \n198.19.2.0/24 via 198.19.2.0 src 198.19.0.0 onlink \n"
	if out != want {
		t.Errorf("routes on %s:\n%s\nwant:\n%s", VXLANDev, out, want)
	}
	// Node IPs are reached on the underlay, not through the tunnel.
	if out, _ := cmdOut("ip", "-n", ns, "-4", "route", "get", "198.18.0.11"); !strings.Contains(out, "dev eth0") {
		t.Errorf("route to node1: %s, want dev eth0", out)
	}
}

// checkVXLANState checks that the state file, Load and Status of a 3-node
// vxlan lab record the routing and the MTU.
func checkVXLANState(t *testing.T, l *Lab) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(l.Config.StateDir, l.Config.Name, stateFile))
	if err != nil {
		t.Fatal(err)
	}
	var raw struct {
		Routing string `json:"routing"`
		MTU     int    `json:"mtu"`
		Config  struct {
			Routing string `json:"routing"`
		} `json:"config"`
		Nodes []struct {
			VTEP string `json:"vtep"`
		} `json:"nodes"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	if raw.Routing != "vxlan" || raw.MTU != 1450 || raw.Config.Routing != "vxlan" || raw.Nodes[2].VTEP != "198.19.2.0" {
		t.Errorf("state.json: %+v", raw)
	}
	l2, err := Load(l.Config.StateDir, l.Config.Name)
	if err != nil || l2.Routing != RoutingVXLAN || l2.MTU != 1450 {
		t.Errorf("Load: %v %+v", err, l2)
	}
	st, err := l.Status()
	if err != nil || !strings.Contains(st, "routing vxlan, mtu 1450") || !strings.Contains(st, "vtep 198.19.1.0") || strings.Contains(st, "MISSING") {
		t.Errorf("Status: %v\n%s", err, st)
	}
}

func cmdOut(name string, args ...string) (string, error) {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// frame is a summary of an IPv4 frame seen on the underlay.
type frame struct {
	src, dst         string
	proto            int
	dport            int
	vni              int    // VXLAN frames only
	innerSrc, innerD string // VXLAN frames with an inner IPv4 packet
	innerProto       int
}

// capture starts an AF_PACKET capture of IPv4 frames on interface ifname of
// namespace ns; the returned function stops it and returns what it saw.
func capture(t *testing.T, ns, ifname string) func() []frame {
	t.Helper()
	idx := linkIn(t, ns, ifname).Attrs().Index
	proto := int(htons(unix.ETH_P_ALL))
	var fd int
	err := netnsx.Do(netnsx.Path(ns), func() error {
		var err error
		fd, err = unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, proto)
		if err != nil {
			return err
		}
		return unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: idx})
	})
	if err != nil {
		t.Fatalf("capture on %s/%s: %v", ns, ifname, err)
	}
	tv := unix.NsecToTimeval(int64(200 * time.Millisecond))
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		t.Fatal(err)
	}
	var frames []frame
	done := make(chan struct{})
	var stop bool
	stopc := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 65536)
		for {
			n, _, err := unix.Recvfrom(fd, buf, 0)
			if err != nil {
				select {
				case <-stopc:
					return
				default:
					continue
				}
			}
			if f, ok := parseFrame(buf[:n]); ok {
				frames = append(frames, f)
			}
		}
	}()
	return func() []frame {
		if !stop {
			stop = true
			// Let the last frames arrive, then stop after the next timeout.
			time.Sleep(100 * time.Millisecond)
			close(stopc)
			<-done
			unix.Close(fd)
		}
		return frames
	}
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

func parseFrame(b []byte) (frame, bool) {
	var f frame
	if len(b) < 14+20 || binary.BigEndian.Uint16(b[12:14]) != unix.ETH_P_IP {
		return f, false
	}
	ip := b[14:]
	ihl := int(ip[0]&0x0f) * 4
	f.src, f.dst, f.proto = net.IP(ip[12:16]).String(), net.IP(ip[16:20]).String(), int(ip[9])
	if f.proto != unix.IPPROTO_UDP || len(ip) < ihl+8 {
		return f, true
	}
	udp := ip[ihl:]
	f.dport = int(binary.BigEndian.Uint16(udp[2:4]))
	vx := udp[8:]
	if f.dport != VXLANPort || len(vx) < 8+14+20 || vx[0] != 0x08 {
		return f, true
	}
	f.vni = int(binary.BigEndian.Uint32(vx[4:8]) >> 8)
	inner := vx[8:]
	if binary.BigEndian.Uint16(inner[12:14]) == unix.ETH_P_IP {
		in := inner[14:]
		f.innerSrc, f.innerD, f.innerProto = net.IP(in[12:16]).String(), net.IP(in[16:20]).String(), int(in[9])
	}
	return f, true
}

func vxlanStats(t *testing.T, l *Lab, node string) *netlink.LinkStatistics {
	t.Helper()
	s := linkIn(t, l.Prefix+node, VXLANDev).Attrs().Statistics
	if s == nil {
		t.Fatalf("%s: no statistics for %s", node, VXLANDev)
	}
	return s
}

// pingPong does rounds TCP round trips from ep "from" to to:port.
func pingPong(t *testing.T, from Endpoint, addr string, rounds int) {
	t.Helper()
	for i := 0; i < rounds; i++ {
		if err := dial(from, addr, 3*time.Second); err != nil {
			t.Fatalf("%s -> %s: %v", from.Name, addr, err)
		}
	}
}

// TestVXLANEncapsulation checks that cross-node pod traffic is really
// VXLAN-encapsulated on the underlay, to exactly one peer, and that a native
// lab sends the same traffic bare.
func TestVXLANEncapsulation(t *testing.T) {
	const rounds = 10
	t.Run("vxlan", func(t *testing.T) { testEncapVXLAN(t, rounds) })
	t.Run("native", func(t *testing.T) { testEncapNative(t, rounds) })
}

// testEncapVXLAN sends rounds of pod traffic node0 -> node1 in a 3-node
// vxlan lab and checks the VXLAN counters of all three nodes and the
// frames on node1's and node2's underlay ports.
func testEncapVXLAN(t *testing.T, rounds int) {
	l := newLab(t, Config{Nodes: 3, PodsPerNode: 1, Routing: RoutingVXLAN})
	listen(t, mustEP(t, l, "node1-pod0"), 8080)
	from := mustEP(t, l, "node0-pod0")
	before := map[string]*netlink.LinkStatistics{}
	for _, n := range []string{"node0", "node1", "node2"} {
		before[n] = vxlanStats(t, l, n)
	}
	stop := capture(t, l.Underlay, "cnbn1") // node1's bridge port
	stop2 := capture(t, l.Underlay, "cnbn2")
	pingPong(t, from, "198.19.1.10:8080", rounds)
	frames, frames2 := stop(), stop2()

	d := func(n string) (tx, rx uint64) {
		a := vxlanStats(t, l, n)
		return a.TxPackets - before[n].TxPackets, a.RxPackets - before[n].RxPackets
	}
	tx0, rx0 := d("node0")
	tx1, rx1 := d("node1")
	tx2, rx2 := d("node2")
	t.Logf("vxlan packets: node0 tx %d rx %d, node1 tx %d rx %d, node2 tx %d rx %d", tx0, rx0, tx1, rx1, tx2, rx2)
	// Each round: handshake, data, FIN exchange: several packets each way.
	if min3 := uint64(3 * rounds); tx0 < min3 || rx1 < min3 || tx1 < min3 || rx0 < min3 {
		t.Errorf("too few packets through %s: node0 tx %d rx %d, node1 tx %d rx %d", VXLANDev, tx0, rx0, tx1, rx1)
	}
	if tx2 != 0 || rx2 != 0 {
		t.Errorf("node2's %s saw traffic between node0 and node1: tx %d rx %d (flooding?)", VXLANDev, tx2, rx2)
	}
	checkEncapFrames(t, frames, frames2, rounds)
}

// checkEncapFrames checks the frames captured on node1's underlay port
// (frames) and node2's (frames2) while node0-pod0 talked to node1-pod0
// for rounds: every pod packet VXLAN-encapsulated, none reaching node2.
func checkEncapFrames(t *testing.T, frames, frames2 []frame, rounds int) {
	t.Helper()
	var encap, bare int
	for _, f := range frames {
		switch {
		case f.proto == unix.IPPROTO_UDP && f.dport == VXLANPort:
			if f.vni != VXLANVNI || f.innerProto != unix.IPPROTO_TCP ||
				!(f.src == "198.18.0.10" && f.dst == "198.18.0.11" && f.innerSrc == "198.19.0.10" && f.innerD == "198.19.1.10" ||
					f.src == "198.18.0.11" && f.dst == "198.18.0.10" && f.innerSrc == "198.19.1.10" && f.innerD == "198.19.0.10") {
				t.Errorf("unexpected VXLAN frame on the underlay: %+v", f)
			}
			encap++
		case strings.HasPrefix(f.src, "198.19.") || strings.HasPrefix(f.dst, "198.19."):
			bare++
		}
	}
	t.Logf("underlay port of node1: %d frames, %d VXLAN, %d bare pod packets", len(frames), encap, bare)
	if encap < 6*rounds || bare != 0 {
		t.Errorf("underlay port of node1: %d VXLAN frames (want >= %d), %d bare pod packets (want 0)", encap, 6*rounds, bare)
	}
	for _, f := range frames2 {
		if f.proto == unix.IPPROTO_UDP && f.dport == VXLANPort {
			t.Errorf("VXLAN frame reached node2's port: %+v", f)
			break
		}
	}
}

// testEncapNative sends the same traffic in a 2-node native lab: no
// cnb_vxlan, and the pod packets cross the underlay bare.
func testEncapNative(t *testing.T, rounds int) {
	l := newLab(t, Config{Nodes: 2, PodsPerNode: 1})
	if l.Routing != RoutingNative || l.MTU != 1500 {
		t.Errorf("Lab.Routing %q, Lab.MTU %d; want native, 1500", l.Routing, l.MTU)
	}
	for _, n := range []string{"node0", "node1"} {
		var nf netlink.LinkNotFoundError
		if _, err := nsHandle(t, l.Prefix+n).LinkByName(VXLANDev); !errors.As(err, &nf) {
			t.Errorf("%s: %s lookup = %v, want not found", n, VXLANDev, err)
		}
	}
	listen(t, mustEP(t, l, "node1-pod0"), 8080)
	stop := capture(t, l.Underlay, "cnbn1")
	pingPong(t, mustEP(t, l, "node0-pod0"), "198.19.1.10:8080", rounds)
	var encap, bare int
	for _, f := range stop() {
		switch {
		case f.proto == unix.IPPROTO_UDP && f.dport == VXLANPort:
			encap++
		case f.proto == unix.IPPROTO_TCP && (f.src == "198.19.0.10" && f.dst == "198.19.1.10" || f.src == "198.19.1.10" && f.dst == "198.19.0.10"):
			bare++
		}
	}
	t.Logf("underlay port of node1: %d VXLAN, %d bare pod packets", encap, bare)
	if encap != 0 || bare < 6*rounds {
		t.Errorf("native: %d VXLAN frames (want 0), %d bare pod packets (want >= %d)", encap, bare, 6*rounds)
	}
}

// udpProbe sends one UDP datagram of size bytes with DF set from "from" to
// the UDP socket conn (in another namespace) and reports whether it arrived;
// a local refusal is returned as the error.
func udpProbe(from Endpoint, conn *net.UDPConn, size int) (bool, error) {
	to := conn.LocalAddr().(*net.UDPAddr)
	var fd int
	err := netnsx.Do(from.NetnsPath(), func() error {
		var err error
		fd, err = unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		return err
	})
	if err != nil {
		return false, err
	}
	defer unix.Close(fd)
	if err := unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_MTU_DISCOVER, unix.IP_PMTUDISC_DO); err != nil {
		return false, err
	}
	var sa unix.SockaddrInet4
	copy(sa.Addr[:], to.IP.To4())
	sa.Port = to.Port
	payload := make([]byte, size)
	copy(payload, fmt.Sprintf("probe %d", size))
	if err := unix.Sendto(fd, payload, 0, &sa); err != nil {
		return false, err
	}
	buf := make([]byte, 65536)
	conn.SetReadDeadline(time.Now().Add(time.Second))
	for {
		n, src, err := conn.ReadFromUDP(buf)
		if err != nil {
			return false, nil // timeout: lost
		}
		if n == size && src.IP.String() == from.IP && strings.HasPrefix(string(buf[:n]), fmt.Sprintf("probe %d\x00", size)) {
			return true, nil
		}
	}
}

func udpListen(t *testing.T, ep Endpoint) *net.UDPConn {
	t.Helper()
	var c *net.UDPConn
	err := netnsx.Do(ep.NetnsPath(), func() error {
		var err error
		c, err = net.ListenUDP("udp4", &net.UDPAddr{IP: net.ParseIP(ep.IP), Port: 9999})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestMTU checks the pod MTU of both routings: the largest DF datagram
// (MTU - 28 bytes of UDP payload) crosses nodes, one byte more is refused
// by the sending pod with EMSGSIZE.
func TestMTU(t *testing.T) {
	for _, c := range []struct {
		routing string
		mtu     int
	}{{RoutingVXLAN, 1450}, {RoutingNative, 1500}} {
		t.Run(c.routing, func(t *testing.T) {
			l := newLab(t, Config{Nodes: 2, PodsPerNode: 1, Routing: c.routing})
			if l.MTU != c.mtu {
				t.Errorf("Lab.MTU = %d, want %d", l.MTU, c.mtu)
			}
			for _, x := range []struct{ ns, link string }{
				{"node0-pod0", "eth0"}, {"node0", "cnbp0"}, {"node1-pod0", "eth0"}, {"node1", "cnbp0"},
			} {
				if m := linkIn(t, l.Prefix+x.ns, x.link).Attrs().MTU; m != c.mtu {
					t.Errorf("%s %s mtu %d, want %d", x.ns, x.link, m, c.mtu)
				}
			}
			if m := linkIn(t, l.Prefix+"node0", "eth0").Attrs().MTU; m != 1500 {
				t.Errorf("node0 eth0 mtu %d, want 1500", m)
			}
			dst := udpListen(t, mustEP(t, l, "node1-pod0"))
			from := mustEP(t, l, "node0-pod0")
			max := c.mtu - 28
			ok, err := udpProbe(from, dst, max)
			if err != nil || !ok {
				t.Errorf("%d-byte DF datagram pod -> remote pod: arrived %v, err %v; want arrived", max, ok, err)
			}
			ok, err = udpProbe(from, dst, max+1)
			if !errors.Is(err, syscall.EMSGSIZE) {
				t.Errorf("%d-byte DF datagram pod -> remote pod: arrived %v, err %v; want EMSGSIZE", max+1, ok, err)
			}
			// Same node: the pod MTU applies too.
			if ok, err := udpProbe(mustEP(t, l, "node1"), dst, max); err != nil || !ok {
				t.Errorf("%d-byte DF datagram node1 -> local pod: arrived %v, err %v", max, ok, err)
			}
			if c.routing == RoutingVXLAN {
				// A node's packets to a remote pod take cnb_vxlan (1450) too.
				node := mustEP(t, l, "node0")
				node.IP = "198.19.0.0"
				if ok, err := udpProbe(node, dst, max); err != nil || !ok {
					t.Errorf("%d-byte DF datagram node0 -> remote pod: arrived %v, err %v", max, ok, err)
				}
				if _, err := udpProbe(node, dst, max+1); !errors.Is(err, syscall.EMSGSIZE) {
					t.Errorf("%d-byte DF datagram node0 -> remote pod: err %v, want EMSGSIZE", max+1, err)
				}
				// Node to node is not tunnelled: full 1500.
				n1 := udpListen(t, mustEP(t, l, "node1"))
				if ok, err := udpProbe(mustEP(t, l, "node0"), n1, 1472); err != nil || !ok {
					t.Errorf("1472-byte DF datagram node0 -> node1: arrived %v, err %v", ok, err)
				}
			}
		})
	}
}

// TestRootNamespaceUnchangedVXLAN is TestRootNamespaceUnchanged for a vxlan
// lab, plus: no VXLAN UDP socket appears in the root namespace.
func TestRootNamespaceUnchangedVXLAN(t *testing.T) {
	needRoot(t)
	udp8472 := func() bool {
		b, _ := os.ReadFile("/proc/self/net/udp")
		return strings.Contains(string(b), fmt.Sprintf(":%04X ", VXLANPort))
	}
	before, beforeUDP := hosttest.Take(t), udp8472()
	name, dir := uniqueName(), t.TempDir()
	l, err := Up(t.Context(), Config{Name: name, Nodes: 2, PodsPerNode: 2, StateDir: dir, Routing: RoutingVXLAN})
	if err != nil {
		t.Fatal(err)
	}
	hosttest.AssertUnchanged(t, before, "while the lab was up")
	duringUDP := udp8472()
	if err := dial(mustEP(t, l, "node0-pod0"), "198.19.1.11:1", time.Second); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("dial remote pod closed port: %v, want connection refused", err)
	}
	if _, err := Down(dir, name); err != nil {
		t.Fatal(err)
	}
	hosttest.AssertUnchanged(t, before, "after Up+Down")
	if duringUDP != beforeUDP {
		t.Errorf("UDP port %d socket in the root namespace: before %v, during %v", VXLANPort, beforeUDP, duringUDP)
	}
	assertGone(t, dir, name)
}
