package nftables

import (
	"context"
	"fmt"
	"net/netip"
	"regexp"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/datapath"
	"github.com/cnibench/cnibench/internal/hosttest"
	"github.com/cnibench/cnibench/internal/nsexec"
	"github.com/cnibench/cnibench/lab/labtest"
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
// one has no per-Service chain or anonymous map. Rendering touches no
// kernel: this runs without root, on knftables' fake.
func TestTransactionLayout(t *testing.T) {
	s := labtest.TestService("198.19.1.10", []uint16{1, 2, 3, 4})
	spec := &datapath.Spec{Services: append(datapath.DummyServices(3, 4), s)}
	kp, _ := recorded(t, 0, "")
	b, _ := kp.render(spec, true)
	text := string(b)
	sc := serviceChain(&s)
	for _, want := range []string{
		"add element ip kube-proxy service-ips { 198.18.128.1 . tcp . 80 : goto " + sc + " }",
		"add rule ip kube-proxy " + sc + " ip daddr 198.18.128.1 ip saddr != 198.19.0.0/16 jump mark-for-masquerade",
		"add rule ip kube-proxy " + sc + " numgen random mod 4 vmap { 0 : goto " + endpointChain(&s, s.Endpoints[0]) + " , 1 : goto ",
		"add rule ip kube-proxy " + endpointChain(&s, s.Endpoints[3]) + " meta l4proto tcp dnat to 198.19.1.10:4",
		"add chain ip kube-proxy nat-prerouting { type nat hook prerouting priority -100 ; }",
		"add rule ip kube-proxy masquerading masquerade fully-random",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("kube-proxy transaction lacks %q", want)
		}
	}
	flat, _ := recorded(t, 1, "")
	b, _ = flat.render(spec, true)
	text = string(b)
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
	l := labtest.NewLab(t, "c1n")
	node := labtest.Endpoint(t, l, "node0")
	bal := labtest.NewBalance(t, l)
	// Dummies around the test Service, some with 3 endpoints.
	dummies := append(datapath.DummyServices(40, 4), datapath.DummyServices(60, 3)[40:]...)
	svcs, _, err := datapath.Place(dummies, []datapath.Service{bal.Svc, bal.Hairpin}, datapath.PositionRandom, 2)
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
			bal.Check(t, n)
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
			assertEmpty(t, node.NetnsPath())
		})
	}
}

func assertEmpty(t *testing.T, ns string) {
	t.Helper()
	labtest.AssertNoNFTables(t, ns)
}

// Verify names the piece a hand edit removed, and notices an extra rule.
func TestVerifyCatchesMissing(t *testing.T) {
	labtest.NeedRoot(t) // every subtest needs a scratch namespace
	for _, lay := range layouts {
		t.Run(lay.name, func(t *testing.T) {
			ns := labtest.ScratchNS(t, "nfv")
			d := newOrSkip(t, ns, lay.opts)
			spec := datapath.Spec{Services: datapath.DummyServices(5, 4)}
			labtest.Sync(t, d, spec, "counts")
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
			_, err := d.Verify(context.Background())
			if err == nil || !strings.Contains(err.Error(), wantInErr) || !strings.Contains(err.Error(), s.ServicePortName()) {
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
			if err == nil || !strings.Contains(err.Error(), s1.ServicePortName()) || !strings.Contains(err.Error(), serviceIPsMap) {
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
	if _, err := nsexec.Run(context.Background(), ns, nil, "nft", args...); err != nil {
		t.Fatal(err)
	}
}

// 2,000 Services × 4 endpoints: counts read back equal Expected; Close
// (twice) leaves nothing; the host's rulesets never change.
func TestScale(t *testing.T) {
	labtest.NeedRoot(t)
	root := hosttest.Take(t)
	for _, lay := range layouts {
		t.Run(lay.name, func(t *testing.T) {
			ns := labtest.ScratchNS(t, "nfs")
			labtest.CheckScale(t, newOrSkip(t, ns, lay.opts), 2000)
			assertEmpty(t, ns)
		})
	}
	hosttest.AssertUnchanged(t, root, "by 2,000 Services in scratch namespaces")
}

// A full sync with fewer Services (and other endpoint counts) deletes what
// is gone in the same transaction; a new Datapath starts from a clean table.
func TestStaleChainsDeleted(t *testing.T) {
	labtest.NeedRoot(t) // every subtest needs a scratch namespace
	for _, lay := range layouts {
		t.Run(lay.name, func(t *testing.T) {
			ns := labtest.ScratchNS(t, "nfx")
			labtest.StaleChains(t, func() datapath.Datapath { return newOrSkip(t, ns, lay.opts) }, 2)
		})
	}
}

func TestRefusesHostNamespace(t *testing.T) {
	labtest.NeedRoot(t)
	if _, err := New("/proc/self/ns/net", Options{}); err == nil || !strings.Contains(err.Error(), "refusing") {
		t.Fatalf("host namespace accepted: %v", err)
	}
}
