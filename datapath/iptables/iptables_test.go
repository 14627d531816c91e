package iptables

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/datapath"
	"github.com/cnibench/cnibench/internal/hosttest"
	"github.com/cnibench/cnibench/internal/nsexec"
	"github.com/cnibench/cnibench/lab/labtest"
)

// backends are the two datapaths of this package, as subtests.
var backends = []struct {
	name string
	opts Options
	tool string // iptables binary for hand edits
}{
	{NameNFT, Options{ClusterCIDR: "198.19.0.0/16"}, "iptables-nft"},
	{NameLegacy, Options{Legacy: true, ClusterCIDR: "198.19.0.0/16"}, "iptables-legacy"},
}

// Chain names must be kube-proxy's: these are the well-known chains of a
// default cluster (kubernetes and kube-dns Services), as seen in any
// kube-proxy iptables-save.
func TestChainNamesAreKubeProxys(t *testing.T) {
	for _, c := range []struct {
		ns, name, port string
		proto          datapath.Protocol
		want           string
	}{
		{"default", "kubernetes", "https", datapath.TCP, "KUBE-SVC-NPX46M4PTMTKRN6Y"},
		{"kube-system", "kube-dns", "dns", datapath.UDP, "KUBE-SVC-TCOU7JCQXEZGVUNU"},
		{"kube-system", "kube-dns", "dns-tcp", datapath.TCP, "KUBE-SVC-ERIFXISQEP7F7OF4"},
		{"kube-system", "kube-dns", "metrics", datapath.TCP, "KUBE-SVC-JD5MR3NA4I4DYORP"},
	} {
		s := datapath.Service{Namespace: c.ns, Name: c.name, PortName: c.port, Protocol: c.proto}
		if got := svcChain(&s); got != c.want {
			t.Errorf("%s/%s:%s: %s, want %s", c.ns, c.name, c.port, got, c.want)
		}
	}
}

// The generated batch has kube-proxy's shape: 1/(n-i) probabilities on all
// but the last endpoint, the NodePorts tail call last in KUBE-SERVICES,
// comments dropped above 1,000 endpoints.
func TestGenerateLayout(t *testing.T) {
	s := labtest.TestService("198.19.1.10", []uint16{1, 2, 3, 4})
	spec := datapath.Spec{Services: []datapath.Service{s}}
	b := genText(t, &spec, genParams{mark: masqMark, clusterCIDR: "198.19.0.0/16"})
	sc := svcChain(&s)
	for _, want := range []string{
		`-A KUBE-SERVICES -m comment --comment "cnibench/server:http cluster IP" -m tcp -p tcp -d 198.18.128.1 --dport 80 -j ` + sc,
		`-A ` + sc + ` -m comment --comment "cnibench/server:http cluster IP" -m tcp -p tcp -d 198.18.128.1 --dport 80 ! -s 198.19.0.0/16 -j KUBE-MARK-MASQ`,
		`-m statistic --mode random --probability 0.2500000000 -j ` + sepChain(&s, s.Endpoints[0]),
		`-m statistic --mode random --probability 0.3333333333 -j ` + sepChain(&s, s.Endpoints[1]),
		`-m statistic --mode random --probability 0.5000000000 -j ` + sepChain(&s, s.Endpoints[2]),
		`-A ` + sc + ` -m comment --comment "cnibench/server:http -> 198.19.1.10:4" -j ` + sepChain(&s, s.Endpoints[3]) + "\n",
		`-A ` + sepChain(&s, s.Endpoints[0]) + ` -m comment --comment cnibench/server:http -m tcp -p tcp -j DNAT --to-destination 198.19.1.10:1`,
		`-A KUBE-POSTROUTING -m comment --comment "kubernetes service traffic requiring SNAT" -j MASQUERADE --random-fully`,
		"-A KUBE-MARK-MASQ -j MARK --or-mark 0x00004000\n", // Go's %#08x, as kube-proxy prints it
	} {
		if !strings.Contains(b, want) {
			t.Errorf("batch lacks %q", want)
		}
	}
	nat := b[strings.Index(b, "*nat"):]
	rules := strings.Split(strings.TrimSpace(nat), "\n")
	if tail := rules[len(rules)-2]; !strings.Contains(tail, "-j KUBE-NODEPORTS") {
		t.Errorf("last nat rule is %q, want the KUBE-NODEPORTS tail call", tail)
	}
	big := datapath.Spec{Services: datapath.DummyServices(300, 4)}
	if strings.Contains(genText(t, &big, genParams{mark: masqMark}), " -> ") {
		t.Error("endpoint comments kept above 1,000 endpoints")
	}
	// Two ports with one port name would share kube-proxy's chain.
	twin := s
	twin.Port++
	twin.VIP = twin.VIP.Next()
	_, err := generate(&datapath.Spec{Services: []datapath.Service{s, twin}}, genParams{mark: masqMark})
	if err == nil || !strings.Contains(err.Error(), `have the same port name "cnibench/server:http"`) {
		t.Errorf("two Services with one port name: %v", err)
	}
}

func genText(t *testing.T, spec *datapath.Spec, p genParams) string {
	t.Helper()
	b, err := generate(spec, p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b.text)
}

// Each backend balances real connections over all endpoints of a Service
// on the other node, then Close leaves the node's tables empty.
func TestBalance(t *testing.T) {
	l := labtest.NewLab(t, "c1i")
	node := labtest.Endpoint(t, l, "node0")
	bal := labtest.NewBalance(t, l)
	// Dummies around the test Service, as in a sweep.
	svcs, _, err := datapath.Place(datapath.DummyServices(50, 4), []datapath.Service{bal.Svc, bal.Hairpin}, datapath.PositionRandom, 1)
	if err != nil {
		t.Fatal(err)
	}
	spec := datapath.Spec{Services: svcs}
	const n = 400
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			d := newOrSkip(t, node.NetnsPath(), b.opts)
			if _, err := d.Program(context.Background(), spec); err != nil {
				t.Fatal(err)
			}
			if _, err := d.Verify(context.Background()); err != nil {
				t.Fatal(err)
			}
			bal.Check(t, n)
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
			assertEmpty(t, node.NetnsPath(), b.tool)
		})
	}
}

// assertEmpty checks that the namespace holds no rule and no chain of any
// iptables backend, and no nftables table.
func assertEmpty(t *testing.T, ns, tool string) {
	t.Helper()
	out, err := nsexec.Run(context.Background(), ns, nil, tool+"-save")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "-A") || strings.HasPrefix(l, ":") && strings.Contains(l, " - [") {
			t.Errorf("%s left: %s", tool, l)
		}
	}
	if tool == "iptables-nft" {
		labtest.AssertNoNFTables(t, ns)
	}
}

// Verify names the piece a hand edit removed.
func TestVerifyCatchesMissing(t *testing.T) {
	labtest.NeedRoot(t) // every subtest needs a scratch namespace
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			ns := labtest.ScratchNS(t, "ipv")
			d := newOrSkip(t, ns, b.opts)
			spec := datapath.Spec{Services: datapath.DummyServices(5, 4)}
			labtest.Sync(t, d, spec, "counts")
			s := &spec.Services[3]
			ep := s.Endpoints[2]
			sep := sepChain(s, ep)
			// Rule 2 of a KUBE-SEP chain is its DNAT.
			edit(t, ns, b.tool, "-t", "nat", "-D", sep, "2")
			_, err := d.Verify(context.Background())
			if err == nil || !strings.Contains(err.Error(), endpointString(ep)) || !strings.Contains(err.Error(), sep) {
				t.Fatalf("after deleting the DNAT of %s: %v", endpointString(ep), err)
			}
			t.Logf("caught: %v", err)
			// Reprogramming repairs it; then drop a Service's dispatch rule.
			if _, err := d.Program(context.Background(), spec); err != nil {
				t.Fatal(err)
			}
			if _, err := d.Verify(context.Background()); err != nil {
				t.Fatalf("after repair: %v", err)
			}
			edit(t, ns, b.tool, "-t", "nat", "-D", "KUBE-SERVICES", "2")
			_, err = d.Verify(context.Background())
			if err == nil || !strings.Contains(err.Error(), spec.Services[1].ServicePortName()) {
				t.Fatalf("after deleting the KUBE-SERVICES rule of %s: %v", spec.Services[1].Key(), err)
			}
			t.Logf("caught: %v", err)
			// An extra rule in one of our chains is caught by the counts.
			if _, err := d.Program(context.Background(), spec); err != nil {
				t.Fatal(err)
			}
			edit(t, ns, b.tool, "-t", "nat", "-A", "KUBE-MARK-MASQ", "-j", "RETURN")
			if _, err = d.Verify(context.Background()); err == nil {
				t.Fatal("an extra rule went unnoticed")
			}
			t.Logf("caught: %v", err)
		})
	}
}

func edit(t *testing.T, ns, tool string, args ...string) {
	t.Helper()
	if _, err := nsexec.Run(context.Background(), ns, nil, tool, args...); err != nil {
		t.Fatal(err)
	}
}

// 2,000 Services × 4 endpoints: counts read back equal Expected; Close
// (twice) leaves nothing; the host's rulesets never change.
func TestScale(t *testing.T) {
	labtest.NeedRoot(t)
	root := hosttest.Take(t)
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			ns := labtest.ScratchNS(t, "ips")
			labtest.CheckScale(t, newOrSkip(t, ns, b.opts), 2000)
			assertEmpty(t, ns, b.tool)
		})
	}
	hosttest.AssertUnchanged(t, root, "by 2,000 Services in scratch namespaces")
}

// A full sync with fewer Services deletes the chains of the ones gone, and
// chains left by an earlier run (another Datapath) are cleaned up too.
func TestStaleChainsDeleted(t *testing.T) {
	labtest.NeedRoot(t) // every subtest needs a scratch namespace
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			ns := labtest.ScratchNS(t, "ipx")
			labtest.StaleChains(t, func() datapath.Datapath { return newOrSkip(t, ns, b.opts) }, 4)
		})
	}
}

func TestRefusesHostNamespace(t *testing.T) {
	labtest.NeedRoot(t)
	if _, err := New("/proc/self/ns/net", Options{}); err == nil || !strings.Contains(err.Error(), "refusing") {
		t.Fatalf("host namespace accepted: %v", err)
	}
	if _, err := New("", Options{}); err == nil {
		t.Fatal("empty namespace accepted")
	}
}

func TestBadSpecRefused(t *testing.T) {
	ns := labtest.ScratchNS(t, "ipb")
	d := newOrSkip(t, ns, Options{})
	svcs := datapath.DummyServices(2, 2)
	svcs[1].PortName = svcs[0].PortName
	svcs[1].Name = svcs[0].Name
	svcs[1].Port++ // a distinct Key but the same kube-proxy port name
	if _, err := d.Program(context.Background(), datapath.Spec{Services: svcs}); err == nil {
		t.Fatal("colliding chain names accepted")
	}
	if _, err := exec.LookPath("iptables-nft-save"); err == nil {
		out, _ := nsexec.Run(context.Background(), ns, nil, "iptables-nft-save")
		if strings.Contains(string(out), "KUBE-") {
			t.Fatalf("a refused spec wrote rules:\n%s", out)
		}
	}
}
