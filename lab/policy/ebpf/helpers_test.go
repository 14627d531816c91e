package ebpf

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"testing"
	"time"

	cebpf "github.com/cilium/ebpf"

	"github.com/cnibench/cnibench/datapath"
	"github.com/cnibench/cnibench/internal/netnsx"
	"github.com/cnibench/cnibench/lab"
	"github.com/cnibench/cnibench/lab/labtest"
	"github.com/cnibench/cnibench/lab/policy"
)

const (
	echoPort   = 8080
	denyWithin = 300 * time.Millisecond // a dropped SYN: the connect times out
)

// policyLab is a 1-node lab with three pods: server, client and a third.
type policyLab struct {
	l                     *lab.Lab
	node                  lab.Node
	server, client, third lab.Endpoint
	serverIf, clientIf    string
}

func newPolicyLab(t *testing.T) *policyLab {
	t.Helper()
	l := labtest.NewLabSized(t, "pe", 1, 3)
	return &policyLab{l: l, node: l.Nodes[0],
		server: labtest.Endpoint(t, l, "node0-pod0"), client: labtest.Endpoint(t, l, "node0-pod1"), third: labtest.Endpoint(t, l, "node0-pod2"),
		serverIf: "cnbp0", clientIf: "cnbp1"}
}

func (p *policyLab) site() policy.Site {
	return policy.Site{Netns: netnsx.Path(p.node.Netns), Node: p.node.Name, StateDir: p.l.Config.StateDir, Prefix: p.l.Prefix}
}

// spec: the server takes TCP and UDP echoPort from `from` only and sends
// nothing of its own; the client may only reach the server on them and
// takes nothing in. Every reply passes only through conntrack.
func (p *policyLab) spec(from lab.Endpoint) policy.Spec {
	ports := []policy.Port{{Protocol: datapath.TCP, Port: echoPort}, {Protocol: datapath.UDP, Port: echoPort}}
	return policy.Spec{Pods: []policy.PodPolicy{
		{Pod: p.server.Name, Node: p.node.Name, IP: addr(p.server), HostIface: p.serverIf,
			Ingress: []policy.Rule{{Peers: []netip.Prefix{host(from)}, Ports: ports}}, Egress: []policy.Rule{}},
		{Pod: p.client.Name, Node: p.node.Name, IP: addr(p.client), HostIface: p.clientIf,
			Ingress: []policy.Rule{}, Egress: []policy.Rule{{Peers: []netip.Prefix{host(p.server)}, Ports: ports}}},
	}}
}

// udpEcho sends every datagram to ep:port back, until the test ends.
func udpEcho(t *testing.T, ep lab.Endpoint, port int) {
	t.Helper()
	var c net.PacketConn
	err := netnsx.Do(ep.NetnsPath(), func() error {
		var err error
		c, err = net.ListenPacket("udp4", net.JoinHostPort(ep.IP, fmt.Sprint(port)))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := c.ReadFrom(buf)
			if err != nil {
				return
			}
			c.WriteTo(buf[:n], from)
		}
	}()
}

// udpExchange sends a datagram from ep to to and waits for it back.
func udpExchange(ep lab.Endpoint, to netip.AddrPort, timeout time.Duration) error {
	return netnsx.Do(ep.NetnsPath(), func() error {
		c, err := net.Dial("udp4", to.String())
		if err != nil {
			return err
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(timeout))
		if _, err := c.Write([]byte("ping")); err != nil {
			return err
		}
		buf := make([]byte, 16)
		n, err := c.Read(buf)
		if err == nil && string(buf[:n]) != "ping" {
			err = fmt.Errorf("udp echo from %s: %q", to, buf[:n])
		}
		return err
	})
}

func addr(ep lab.Endpoint) netip.Addr   { return netip.MustParseAddr(ep.IP) }
func host(ep lab.Endpoint) netip.Prefix { return netip.PrefixFrom(addr(ep), 32) }

// openT opens the enforcer (skipping on a kernel without what it needs),
// closed at cleanup.
func openT(t *testing.T, site policy.Site) *Enforcer {
	t.Helper()
	e, err := Open(site)
	labtest.SkipIfUnsupported(t, err)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// syncT programs spec and checks Verify's counts hold Expected's.
func syncT(t *testing.T, e *Enforcer, spec policy.Spec) {
	t.Helper()
	if _, err := e.Program(t.Context(), spec); err != nil {
		t.Fatal(err)
	}
	got, err := e.Verify(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if err := got.Holds(e.Expected(spec)); err != nil {
		t.Fatal(err)
	}
}

// mustPass and mustDrop check one connection from ep to to.
func mustPass(t *testing.T, ep lab.Endpoint, to netip.AddrPort) {
	t.Helper()
	if err := labtest.Exchange(ep, to, 2*time.Second); err != nil {
		t.Fatalf("%s -> %s: %v, want allowed", ep.Name, to, err)
	}
}

func mustDrop(t *testing.T, e *Enforcer, ep lab.Endpoint, to netip.AddrPort) {
	t.Helper()
	before, err := e.Drops(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	err = labtest.Exchange(ep, to, denyWithin)
	var ne net.Error
	if err == nil || !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("%s -> %s: %v, want a timeout (SYN dropped)", ep.Name, to, err)
	}
	after, err := e.Drops(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if after < before+1 {
		t.Fatalf("%s -> %s timed out but drops went %d -> %d", ep.Name, to, before, after)
	}
}

// kernelIDs are the IDs of e's programs and maps.
func kernelIDs(t *testing.T, e *Enforcer) (progs []cebpf.ProgramID, mapIDs []cebpf.MapID) {
	t.Helper()
	for _, c := range []*cebpf.Collection{e.coll, e.spare} {
		for _, p := range c.Programs {
			info, err := p.Info()
			if err != nil {
				t.Fatal(err)
			}
			id, _ := info.ID()
			progs = append(progs, id)
		}
	}
	for _, m := range e.coll.Maps {
		id, err := m.Info()
		if err != nil {
			t.Fatal(err)
		}
		mid, _ := id.ID()
		mapIDs = append(mapIDs, mid)
	}
	return progs, mapIDs
}

// gone waits (briefly: the kernel frees some objects from a work queue)
// until no program or map with these IDs exists.
func gone(t *testing.T, progs []cebpf.ProgramID, maps []cebpf.MapID) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	exists := func() string {
		for _, id := range progs {
			if p, err := cebpf.NewProgramFromID(id); !errors.Is(err, os.ErrNotExist) {
				if err == nil {
					p.Close()
				}
				return fmt.Sprintf("program %d", id)
			}
		}
		for _, id := range maps {
			if m, err := cebpf.NewMapFromID(id); !errors.Is(err, os.ErrNotExist) {
				if err == nil {
					m.Close()
				}
				return fmt.Sprintf("map %d", id)
			}
		}
		return ""
	}
	for left := exists(); left != ""; left = exists() {
		if time.Now().After(deadline) {
			t.Fatalf("%s still exists after Close", left)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
