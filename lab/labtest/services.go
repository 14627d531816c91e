package labtest

import (
	"net"
	"net/netip"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/cnibench/cnibench/datapath"
	"github.com/cnibench/cnibench/internal/netnsx"
	"github.com/cnibench/cnibench/lab"
)

// TestService is a Service at TestVIP(0):80 backed by ports on ip.
func TestService(ip string, ports []uint16) datapath.Service {
	s := datapath.Service{Namespace: "cnibench", Name: "server", PortName: "http",
		VIP: datapath.TestVIP(0), Port: 80, Protocol: datapath.TCP}
	for _, p := range ports {
		s.Endpoints = append(s.Endpoints, datapath.Endpoint{IP: netip.MustParseAddr(ip), Port: p})
	}
	return s
}

// HairpinService is a Service at TestVIP(1):81 whose only endpoint is ep
// itself on port 9100. Port 9100 is reserved in ep's namespace: the lab's
// ephemeral range covers every port, and one of the many connections a
// balance check opens from ep could otherwise hold 9100 as its local
// port when CheckHairpin listens there.
func HairpinService(t *testing.T, ep lab.Endpoint) datapath.Service {
	t.Helper()
	err := netnsx.Do(ep.NetnsPath(), func() error {
		return os.WriteFile("/proc/sys/net/ipv4/ip_local_reserved_ports", []byte("9100"), 0o644)
	})
	if err != nil {
		t.Fatalf("reserve the hairpin port in %s: %v", ep.Name, err)
	}
	return datapath.Service{Namespace: "cnibench", Name: "hairpin", PortName: "http",
		VIP: datapath.TestVIP(1), Port: 81, Protocol: datapath.TCP,
		Endpoints: []datapath.Endpoint{{IP: netip.MustParseAddr(ep.IP), Port: 9100}}}
}

// CheckHairpin connects from ep to a Service whose endpoint is ep itself:
// it only works if the datapath masquerades the hairpin connection (else
// the reply never goes back through the node's conntrack), and the
// endpoint must see the connection come from another address.
func CheckHairpin(t *testing.T, ep lab.Endpoint, svc datapath.Service) {
	t.Helper()
	var ln net.Listener
	err := netnsx.Do(ep.NetnsPath(), func() error {
		var err error
		ln, err = net.Listen("tcp4", net.JoinHostPort(ep.IP, strconv.Itoa(int(svc.Endpoints[0].Port))))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	from := make(chan string, 10)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			from <- c.RemoteAddr().(*net.TCPAddr).IP.String()
			c.Close()
		}
	}()
	Connect(t, ep, netip.AddrPortFrom(svc.VIP, svc.Port), 5)
	for i := 0; i < 5; i++ {
		select {
		case src := <-from:
			if src == ep.IP {
				t.Fatalf("hairpin connection not masqueraded: endpoint sees its own address %s", src)
			}
		case <-time.After(2 * time.Second):
			t.Fatalf("hairpin connection %d never accepted", i)
		}
	}
}
