package ebpf

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/cnibench/cnibench/datapath"
	"github.com/cnibench/cnibench/internal/netnsx"
	"github.com/cnibench/cnibench/lab"
)

const (
	balanceConns = 400
	backendPort  = 8080
	tcpVIP       = "198.18.200.10:80"
	udpVIP       = "198.18.200.10:53"
)

// newTestLab brings up a 2-node lab with 3 pods per node, named
// c2<random> (objects cnb-c2<random>-...), taken down at cleanup.
func newTestLab(t *testing.T) *lab.Lab {
	t.Helper()
	needRoot(t)
	cfg := lab.Config{Name: fmt.Sprintf("c2%06d", rand.IntN(1000000)), Nodes: 2, PodsPerNode: 3, StateDir: t.TempDir()}
	t.Cleanup(func() {
		if _, err := lab.Down(cfg.StateDir, cfg.Name); err != nil {
			t.Errorf("lab down: %v", err)
		}
	})
	l, err := lab.Up(context.Background(), cfg)
	if err != nil {
		t.Fatalf("lab up: %v", err)
	}
	return l
}

// balanceSpec: a TCP and a UDP Service on the same VIP, each backed by
// the 4 pods eps (port 8080), among 1000 dummy Services.
func balanceSpec(t *testing.T, eps []lab.Endpoint) datapath.Spec {
	t.Helper()
	spec := dummySpec(1000, 4)
	tcp, udp := netip.MustParseAddrPort(tcpVIP), netip.MustParseAddrPort(udpVIP)
	var ends []datapath.Endpoint
	for _, ep := range eps {
		ends = append(ends, datapath.Endpoint{IP: netip.MustParseAddr(ep.IP), Port: backendPort})
	}
	spec.Services = append(spec.Services,
		datapath.Service{Namespace: "default", Name: "echo", PortName: "tcp", VIP: tcp.Addr(), Port: tcp.Port(), Protocol: datapath.TCP, Endpoints: ends},
		datapath.Service{Namespace: "default", Name: "echo", PortName: "udp", VIP: udp.Addr(), Port: udp.Port(), Protocol: datapath.UDP, Endpoints: ends},
	)
	// Put the test Services somewhere in the middle, as kube-proxy's order is random.
	n := len(spec.Services)
	spec.Services[n-2], spec.Services[317] = spec.Services[317], spec.Services[n-2]
	spec.Services[n-1], spec.Services[640] = spec.Services[640], spec.Services[n-1]
	return spec
}

// backends starts the echo-name servers: one pod on the client's node
// (same-node path) and every pod of node1 (routed path across the underlay).
func backends(t *testing.T, l *lab.Lab) []lab.Endpoint {
	t.Helper()
	var eps []lab.Endpoint
	for _, name := range []string{"node0-pod1", "node1-pod0", "node1-pod1", "node1-pod2"} {
		ep, err := l.Endpoint(name)
		if err != nil {
			t.Fatal(err)
		}
		serve(t, ep, backendPort)
		eps = append(eps, ep)
	}
	return eps
}

func program(t *testing.T, d datapath.Datapath, spec datapath.Spec) {
	t.Helper()
	st, err := d.Program(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	got, err := d.Verify(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if want := d.Expected(spec); got != want {
		t.Fatalf("Verify counts %+v, want %+v", got, want)
	}
	t.Logf("%s: programmed %d services in %v (generate %v), verified %+v", d.Name(), len(spec.Services), st.Generate+st.Apply, st.Generate, got)
}

// checkBalance asserts every endpoint got a fair share of the TCP
// connections (each expects conns/4; 1/2 of that is > 5 standard
// deviations away, so a correct datapath never fails it), that UDP worked
// through the VIP, and that nothing failed.
func checkBalance(t *testing.T, r clientReport, eps []lab.Endpoint, conns int, udpSpread bool) {
	t.Helper()
	if r.Failures > 0 {
		t.Errorf("%d failures, first: %v", r.Failures, r.Errors)
	}
	total := 0
	for _, ep := range eps {
		got := r.TCP[ep.Name]
		total += got
		if fair := conns / len(eps); got < fair/2 {
			t.Errorf("endpoint %s accepted %d of %d TCP connections, want about %d", ep.Name, got, conns, fair)
		}
	}
	if total != conns {
		t.Errorf("endpoints accepted %d TCP connections, client opened %d (%v)", total, conns, r.TCP)
	}
	udp, connected := 0, 0
	for _, ep := range eps {
		udp += r.UDP[ep.Name]
		connected += r.Connected[ep.Name]
	}
	if udp != conns/10 || connected != conns/10 {
		t.Errorf("UDP replies: %d unconnected, %d connected, want %d each", udp, connected, conns/10)
	}
	if udpSpread && (len(r.UDP) < 2 || len(r.Connected) < 2) {
		t.Errorf("UDP went to only %v / %v: not balanced", r.UDP, r.Connected)
	}
	if r.BadSource > 0 {
		t.Errorf("%d UDP replies or peers were not the VIP", r.BadSource)
	}
}

// TestSocketLBBalances: the socket LB, attached to the lab's cgroup,
// spreads a pod's connections to a Service VIP over all its endpoints on
// both nodes, and UDP replies come back from the VIP.
func TestSocketLBBalances(t *testing.T) {
	l := newTestLab(t)
	if l.CgroupRoot == "" {
		t.Skip("skipping: lab has no cgroup v2")
	}
	eps := backends(t, l)
	s, err := NewSocketLB(l.CgroupRoot, Options{})
	skipUnsupported(t, err)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	program(t, s, balanceSpec(t, eps))
	client, _ := l.Endpoint("node0-pod0")
	r := runClientIn(t, l, client, tcpVIP, udpVIP, balanceConns)
	checkBalance(t, r, eps, balanceConns, true)
	n, err := s.FlowEntries(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Errorf("no UDP reverse-NAT entries after UDP traffic")
	}
	t.Logf("UDP reverse-NAT entries: %d", n)
}

// TestTCLBBalances: per-packet DNAT on node0's pod veths spreads a pod's
// connections over endpoints on the same node and on the other node (whose
// replies come back through eth0), with tcx and with netlink (clsact).
func TestTCLBBalances(t *testing.T) {
	l := newTestLab(t)
	eps := backends(t, l)
	spec := balanceSpec(t, eps)
	client, _ := l.Endpoint("node0-pod0")
	node0 := l.Nodes[0]
	for _, how := range []string{AttachTCX, AttachNetlink} {
		t.Run(how, func(t *testing.T) {
			d, err := NewTCLB(lab.Endpoint{Netns: node0.Netns}.NetnsPath(), nil, Options{TCAttach: how})
			skipUnsupported(t, err)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			if got := len(d.Interfaces()); got != len(node0.Pods) {
				t.Fatalf("attached to %v, want the %d pod veths", d.Interfaces(), len(node0.Pods))
			}
			// Control: with empty maps the VIP leads nowhere.
			if err := dialFrom(client, tcpVIP); err == nil {
				t.Fatalf("dial %s worked before any Service was programmed", tcpVIP)
			}
			program(t, d, spec)
			start := time.Now()
			r := runClientIn(t, l, client, tcpVIP, udpVIP, balanceConns)
			checkBalance(t, r, eps, balanceConns, true)
			n, err := d.FlowEntries(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			// Two entries (forward, reverse) per flow, or per distinct
			// source tuple: two UDP flows that drew the same random port
			// share one pair (1 run in 8 or so lost 2 of 960 that way).
			flows := balanceConns + 2*balanceConns/10
			if r.Tuples < flows*9/10 {
				t.Fatalf("the flows used %d distinct source tuples, want nearly one per flow (%d)", r.Tuples, flows)
			}
			if want := 2 * r.Tuples; n < want {
				t.Errorf("conntrack holds %d entries after %d flows from %d source tuples, want >= %d", n, flows, r.Tuples, want)
			}
			t.Logf("conntrack entries: %d for %d source tuples (traffic took %v)", n, r.Tuples, time.Since(start).Round(time.Millisecond))
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
			if err := dialFrom(client, tcpVIP); err == nil {
				t.Fatalf("dial %s still works after Close", tcpVIP)
			}
		})
	}
}

// dialFrom opens a TCP connection from ep's namespace (this process, not
// ep's cgroup) and reads the endpoint's name.
func dialFrom(ep lab.Endpoint, addr string) error {
	var c net.Conn
	err := netnsx.Do(ep.NetnsPath(), func() error {
		var err error
		c, err = net.DialTimeout("tcp4", addr, time.Second)
		return err
	})
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Second))
	b, err := io.ReadAll(c)
	if err == nil && len(b) == 0 {
		err = fmt.Errorf("empty reply")
	}
	return err
}
