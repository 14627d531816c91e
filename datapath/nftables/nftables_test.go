package nftables

import (
	"context"
	"fmt"
	"net/netip"
	"regexp"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/datapath"
)

var layouts = []struct {
	name string
	opts Options
}{
	{NameKubeProxy, Options{ClusterCIDR: "198.19.0.0/16", ServiceCIDR: datapath.ServiceCIDR.String()}},
	{NameFlat, Options{Flat: true, ClusterCIDR: "198.19.0.0/16", ServiceCIDR: datapath.ServiceCIDR.String()}},
}

// Chain names must be kube-proxy's (its unit tests' examples).
func TestChainNamesAreKubeProxys(t *testing.T) {
	s := datapath.Service{Namespace: "ns1", Name: "svc1", PortName: "p80", Protocol: datapath.TCP}
	if got, want := serviceChain(&s), "service-ULMVA6XW-ns1/svc1/tcp/p80"; got != want {
		t.Errorf("service chain %s, want %s", got, want)
	}
	ep := datapath.Endpoint{IP: netip.MustParseAddr("10.180.0.1"), Port: 80}
	if got, want := endpointChain(&s, ep), "endpoint-5OJB2KTY-ns1/svc1/tcp/p80__10.180.0.1/80"; got != want {
		t.Errorf("endpoint chain %s, want %s", got, want)
	}
}

// The kube-proxy layout's transaction has its per-Service shape; the flat
// one has no per-Service chain or anonymous map.
func TestTransactionLayout(t *testing.T) {
	ns := scratchNS(t, "nfl")
	s := testService("198.19.1.10", []uint16{1, 2, 3, 4})
	spec := &datapath.Spec{Services: append(datapath.DummyServices(3, 4), s)}
	kp := newOrSkip(t, ns, layouts[0].opts)
	tx, _ := kp.transaction(spec, true)
	text := tx.String()
	sc := serviceChain(&s)
	for _, want := range []string{
		"add element ip kube-proxy service-ips { 198.18.128.1 . tcp . 80 : goto " + sc + " }",
		"add rule ip kube-proxy " + sc + " ip daddr 198.18.128.1 tcp dport 80 ip saddr != 198.19.0.0/16 jump mark-for-masquerade",
		"add rule ip kube-proxy " + sc + " numgen random mod 4 vmap { 0 : goto " + endpointChain(&s, s.Endpoints[0]) + " , 1 : goto ",
		"add rule ip kube-proxy " + endpointChain(&s, s.Endpoints[3]) + " meta l4proto tcp dnat to 198.19.1.10:4",
		"add chain ip kube-proxy nat-prerouting { type nat hook prerouting priority -100 ; }",
		"add rule ip kube-proxy masquerading masquerade fully-random",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("kube-proxy transaction lacks %q", want)
		}
	}
	flat := newOrSkip(t, ns, layouts[1].opts)
	tx, _ = flat.transaction(spec, true)
	text = tx.String()
	if perService := regexp.MustCompile(`chain ip kube-proxy (service|endpoint)-[A-Z2-7]{8}-`); perService.MatchString(text) ||
		strings.Contains(text, "vmap {") {
		t.Errorf("flat transaction has per-Service objects:\n%s", text)
	}
	for _, want := range []string{
		"add element ip kube-proxy service-ips { 198.18.128.1 . tcp . 80 : goto lb-4-endpoints }",
		"add element ip kube-proxy endpoints-tcp { 198.18.128.1 . 80 . 3 : 198.19.1.10 . 4 }",
		"add rule ip kube-proxy lb-4-endpoints meta l4proto tcp dnat ip addr . port to ip daddr . tcp dport . numgen random mod 4 map @endpoints-tcp",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("flat transaction lacks %q", want)
		}
	}
}

// Each layout balances real connections over all endpoints of a Service
// on the other node; with two endpoint counts in the flat layout (lb
// chains per count); Close leaves the namespace's ruleset empty.
func TestBalance(t *testing.T) {
	l := newLab(t)
	node := endpoint(t, l, "node0")
	client, server := endpoint(t, l, "node0-pod0"), endpoint(t, l, "node1-pod0")
	ports := []uint16{9001, 9002, 9003, 9004}
	counts := listeners(t, server, ports)
	svc := testService(server.IP, ports)
	hairpin := hairpinService(client)
	// Dummies around the test Service, some with 3 endpoints.
	dummies := append(datapath.DummyServices(40, 4), datapath.DummyServices(60, 3)[40:]...)
	svcs, _, err := datapath.Place(dummies, []datapath.Service{svc, hairpin}, datapath.PositionRandom, 2)
	if err != nil {
		t.Fatal(err)
	}
	spec := datapath.Spec{Services: svcs}
	const n = 400
	for _, lay := range layouts {
		t.Run(lay.name, func(t *testing.T) {
			d := newOrSkip(t, node.NetnsPath(), lay.opts)
			if _, err := d.Program(context.Background(), spec); err != nil {
				t.Fatal(err)
			}
			if got, err := d.Verify(context.Background()); err != nil {
				t.Fatal(err)
			} else {
				t.Logf("%+v", got)
			}
			before := counts()
			connect(t, client, netip.AddrPortFrom(svc.VIP, svc.Port), n)
			checkBalance(t, func() map[uint16]int {
				c := counts()
				for p := range c {
					c[p] -= before[p]
				}
				return c
			}, ports, n)
			checkHairpin(t, client, hairpin)
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
			assertEmpty(t, node.NetnsPath())
		})
	}
}

func assertEmpty(t *testing.T, ns string) {
	t.Helper()
	rs, err := run(context.Background(), ns, nil, "nft", "list", "ruleset")
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(string(rs)) != "" {
		t.Errorf("nftables ruleset not empty after Close:\n%s", rs)
	}
}

// Verify names the piece a hand edit removed, and notices an extra rule.
func TestVerifyCatchesMissing(t *testing.T) {
	for _, lay := range layouts {
		t.Run(lay.name, func(t *testing.T) {
			ns := scratchNS(t, "nfv")
			d := newOrSkip(t, ns, lay.opts)
			spec := datapath.Spec{Services: datapath.DummyServices(5, 4)}
			if _, err := d.Program(context.Background(), spec); err != nil {
				t.Fatal(err)
			}
			got, err := d.Verify(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if want := d.Expected(spec); got != want {
				t.Fatalf("counts %+v, want %+v", got, want)
			}
			s := &spec.Services[3]
			ep := s.Endpoints[2]
			var edit []string
			var wantInErr string
			if lay.opts.Flat {
				edit = []string{"delete", "element", "ip", table, endpointsMap("tcp"), "{", fmt.Sprintf("%s . %d . 2", s.VIP, s.Port), "}"}
				wantInErr = fmt.Sprintf("endpoint %s:%d", ep.IP, ep.Port)
			} else {
				// Flushing the endpoint chain drops its DNAT.
				edit = []string{"flush", "chain", "ip", table, endpointChain(s, ep)}
				wantInErr = endpointChain(s, ep)
			}
			nft(t, ns, edit...)
			_, err = d.Verify(context.Background())
			if err == nil || !strings.Contains(err.Error(), wantInErr) || !strings.Contains(err.Error(), portName(s)) {
				t.Fatalf("after %v: %v", edit, err)
			}
			t.Logf("caught: %v", err)
			if _, err := d.Program(context.Background(), spec); err != nil {
				t.Fatal(err)
			}
			if _, err := d.Verify(context.Background()); err != nil {
				t.Fatalf("after repair: %v", err)
			}
			s1 := &spec.Services[1]
			nft(t, ns, "delete", "element", "ip", table, serviceIPsMap, "{", svcKey(s1), "}")
			_, err = d.Verify(context.Background())
			if err == nil || !strings.Contains(err.Error(), portName(s1)) || !strings.Contains(err.Error(), serviceIPsMap) {
				t.Fatalf("after deleting the service-ips element of %s: %v", s1.Key(), err)
			}
			t.Logf("caught: %v", err)
			if _, err := d.Program(context.Background(), spec); err != nil {
				t.Fatal(err)
			}
			nft(t, ns, "add", "rule", "ip", table, markMasqChain, "return")
			if _, err = d.Verify(context.Background()); err == nil {
				t.Fatal("an extra rule went unnoticed")
			}
			t.Logf("caught: %v", err)
		})
	}
}

func nft(t *testing.T, ns string, args ...string) {
	t.Helper()
	if _, err := run(context.Background(), ns, nil, "nft", args...); err != nil {
		t.Fatal(err)
	}
}

// 2,000 Services × 4 endpoints: counts read back equal Expected; Close
// (twice) leaves nothing; the host's rulesets never change.
func TestScale(t *testing.T) {
	needRoot(t)
	root := rootRulesets(t)
	for _, lay := range layouts {
		t.Run(lay.name, func(t *testing.T) {
			ns := scratchNS(t, "nfs")
			d := newOrSkip(t, ns, lay.opts)
			const n = 2000
			spec := datapath.Spec{Services: datapath.DummyServices(n, 4)}
			st, err := d.Program(context.Background(), spec)
			if err != nil {
				t.Fatal(err)
			}
			got, err := d.Verify(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if want := d.Expected(spec); got != want {
				t.Fatalf("%d services: counts %+v, want %+v", n, got, want)
			}
			mem, err := d.Memory(context.Background())
			if err != nil || mem.RulesetBytes <= 0 {
				t.Fatalf("memory %+v, %v", mem, err)
			}
			t.Logf("%d services × 4: generate %v, apply %v, %d bytes sent; %+v; ruleset %d bytes",
				n, st.Generate, st.Apply, st.Bytes, got, mem.RulesetBytes)
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
			if err := d.Close(); err != nil {
				t.Fatalf("second Close: %v", err)
			}
			assertEmpty(t, ns)
		})
	}
	if after := rootRulesets(t); after != root {
		t.Errorf("host namespace rulesets changed:\nbefore:\n%s\nafter:\n%s", root, after)
	}
}

// A full sync with fewer Services (and other endpoint counts) deletes what
// is gone in the same transaction; a new Datapath starts from a clean table.
func TestStaleChainsDeleted(t *testing.T) {
	for _, lay := range layouts {
		t.Run(lay.name, func(t *testing.T) {
			ns := scratchNS(t, "nfx")
			d := newOrSkip(t, ns, lay.opts)
			if _, err := d.Program(context.Background(), datapath.Spec{Services: datapath.DummyServices(30, 4)}); err != nil {
				t.Fatal(err)
			}
			spec := datapath.Spec{Services: datapath.DummyServices(20, 3)}
			if _, err := d.Program(context.Background(), spec); err != nil {
				t.Fatal(err)
			}
			if got, err := d.Verify(context.Background()); err != nil || got != d.Expected(spec) {
				t.Fatalf("after shrinking: %+v, %v (want %+v)", got, err, d.Expected(spec))
			}
			d2 := newOrSkip(t, ns, lay.opts)
			small := datapath.Spec{Services: datapath.DummyServices(10, 2)}
			if _, err := d2.Program(context.Background(), small); err != nil {
				t.Fatal(err)
			}
			if got, err := d2.Verify(context.Background()); err != nil || got != d2.Expected(small) {
				t.Fatalf("after restart: %+v, %v (want %+v)", got, err, d2.Expected(small))
			}
		})
	}
}

func TestRefusesHostNamespace(t *testing.T) {
	needRoot(t)
	if _, err := New("/proc/self/ns/net", Options{}); err == nil || !strings.Contains(err.Error(), "refusing") {
		t.Fatalf("host namespace accepted: %v", err)
	}
}
