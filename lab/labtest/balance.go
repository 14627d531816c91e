package labtest

import (
	"net/netip"
	"testing"

	"github.com/cnibench/cnibench/datapath"
	"github.com/cnibench/cnibench/lab"
)

// Balance is the traffic side of a datapath's balance test in a lab from
// NewLab: Client (node0-pod0) connects to Svc, whose endpoints are
// listeners on Ports of Server (node1-pod0, across the underlay), and to
// Hairpin, whose only endpoint is Client itself.
type Balance struct {
	Client, Server lab.Endpoint
	Ports          []uint16
	Svc, Hairpin   datapath.Service
	counts         func() map[uint16]int
}

// NewBalance starts the listeners; the caller programs Svc and Hairpin.
func NewBalance(t *testing.T, l *lab.Lab) *Balance {
	t.Helper()
	b := &Balance{
		Client: Endpoint(t, l, "node0-pod0"),
		Server: Endpoint(t, l, "node1-pod0"),
		Ports:  []uint16{9001, 9002, 9003, 9004},
	}
	b.counts = Listeners(t, b.Server, b.Ports)
	b.Svc = TestService(b.Server.IP, b.Ports)
	b.Hairpin = HairpinService(t, b.Client)
	return b
}

// Check opens n connections from Client to Svc and checks that they spread
// uniformly over Ports (only this call's connections count, so it can run
// once per datapath), then checks Hairpin.
func (b *Balance) Check(t *testing.T, n int) {
	t.Helper()
	before := b.counts()
	Connect(t, b.Client, netip.AddrPortFrom(b.Svc.VIP, b.Svc.Port), n)
	CheckBalance(t, func() map[uint16]int {
		c := b.counts()
		for p := range c {
			c[p] -= before[p]
		}
		return c
	}, b.Ports, n)
	CheckHairpin(t, b.Client, b.Hairpin)
}
