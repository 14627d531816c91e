package nftables

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cnibench/cnibench/datapath"
	"github.com/cnibench/cnibench/internal/netnsx"
	"github.com/cnibench/cnibench/lab"
)

func needRoot(t *testing.T) {
	t.Helper()
	if err := lab.RequirePrivileges(); err != nil {
		t.Skipf("skipping: %v", err)
	}
}

// scratchNS creates an empty namespace cnb-c1-<tag>-<random>, removed at
// cleanup, and returns its path.
func scratchNS(t *testing.T, tag string) string {
	t.Helper()
	needRoot(t)
	name := fmt.Sprintf("cnb-c1-%s-%06d", tag, rand.IntN(1000000))
	t.Cleanup(func() {
		if err := netnsx.DeleteNamed(name); err != nil {
			t.Errorf("delete %s: %v", name, err)
		}
	})
	if err := netnsx.CreateNamed([]string{name}, func(string) {}); err != nil {
		t.Fatal(err)
	}
	return netnsx.Path(name)
}

// newLab brings up a 2-node lab with one pod per node, taken down at cleanup.
func newLab(t *testing.T) *lab.Lab {
	t.Helper()
	needRoot(t)
	cfg := lab.Config{Name: fmt.Sprintf("c1n%06d", rand.IntN(1000000)), Nodes: 2, PodsPerNode: 1, StateDir: t.TempDir()}
	t.Cleanup(func() {
		if _, err := lab.Down(cfg.StateDir, cfg.Name); err != nil {
			t.Errorf("lab down: %v", err)
		}
	})
	l, err := lab.Up(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func endpoint(t *testing.T, l *lab.Lab, name string) lab.Endpoint {
	t.Helper()
	ep, err := l.Endpoint(name)
	if err != nil {
		t.Fatal(err)
	}
	return ep
}

// listeners starts one TCP listener per port in ep's namespace; each
// counts the connections it accepts.
func listeners(t *testing.T, ep lab.Endpoint, ports []uint16) func() map[uint16]int {
	t.Helper()
	var mu sync.Mutex
	counts := map[uint16]int{}
	for _, p := range ports {
		var ln net.Listener
		err := netnsx.Do(ep.NetnsPath(), func() error {
			var err error
			ln, err = net.Listen("tcp4", net.JoinHostPort(ep.IP, strconv.Itoa(int(p))))
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				c.Close()
				mu.Lock()
				counts[p]++
				mu.Unlock()
			}
		}()
	}
	return func() map[uint16]int {
		mu.Lock()
		defer mu.Unlock()
		out := make(map[uint16]int, len(counts))
		for k, v := range counts {
			out[k] = v
		}
		return out
	}
}

// connect opens n short TCP connections from ep's namespace to addr.
func connect(t *testing.T, ep lab.Endpoint, addr netip.AddrPort, n int) {
	t.Helper()
	err := netnsx.Do(ep.NetnsPath(), func() error {
		for i := 0; i < n; i++ {
			c, err := net.DialTimeout("tcp4", addr.String(), 2*time.Second)
			if err != nil {
				return fmt.Errorf("connection %d to %s: %w", i, addr, err)
			}
			c.Close()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// checkBalance waits for n accepts and checks that a uniform choice among
// the ports explains the counts: Pearson's chi-square below 30 (p ≈ 1.5e-6
// with 3 degrees of freedom for 4 endpoints, so a correct layout fails
// about once in 700,000 runs; kube-proxy's probabilities with a bug such
// as 1/n on every rule give a chi-square near 70 at n = 400).
func checkBalance(t *testing.T, counts func() map[uint16]int, ports []uint16, n int) {
	t.Helper()
	var got map[uint16]int
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		got = counts()
		total := 0
		for _, c := range got {
			total += c
		}
		if total == n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d connections accepted: %v", total, n, got)
		}
	}
	exp := float64(n) / float64(len(ports))
	chi2 := 0.0
	for _, p := range ports {
		d := float64(got[p]) - exp
		chi2 += d * d / exp
	}
	t.Logf("accepts per endpoint port %v, chi-square %.1f", got, chi2)
	if chi2 > 30 {
		t.Fatalf("unbalanced: %v (chi-square %.1f > 30 for a uniform choice)", got, chi2)
	}
}

// rootRulesets is the host namespace's rulesets as every tool sees them,
// read only, to prove the tests never touch it.
func rootRulesets(t *testing.T) string {
	t.Helper()
	var out string
	for _, c := range [][]string{{"nft", "list", "ruleset"}, {"iptables-legacy-save"}, {"iptables-nft-save"}} {
		b, err := exec.Command(c[0], c[1:]...).Output()
		if err != nil {
			continue
		}
		out += c[0] + ":\n" + stripComments(string(b))
	}
	return out
}

func stripComments(s string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// newOrSkip builds a Datapath, skipping when the machine cannot.
func newOrSkip(t *testing.T, ns string, opts Options) *Datapath {
	t.Helper()
	d, err := newDatapath(ns, opts)
	if errors.Is(err, errors.ErrUnsupported) {
		t.Skipf("unsupported here: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// testService is a Service at TestVIP(0):80 backed by ports on ip.
func testService(ip string, ports []uint16) datapath.Service {
	s := datapath.Service{Namespace: "cnibench", Name: "server", PortName: "http",
		VIP: datapath.TestVIP(0), Port: 80, Protocol: datapath.TCP}
	for _, p := range ports {
		s.Endpoints = append(s.Endpoints, datapath.Endpoint{IP: netip.MustParseAddr(ip), Port: p})
	}
	return s
}

// hairpinService is a Service at TestVIP(1):81 whose only endpoint is ep
// itself on port 9100.
func hairpinService(ep lab.Endpoint) datapath.Service {
	return datapath.Service{Namespace: "cnibench", Name: "hairpin", PortName: "http",
		VIP: datapath.TestVIP(1), Port: 81, Protocol: datapath.TCP,
		Endpoints: []datapath.Endpoint{{IP: netip.MustParseAddr(ep.IP), Port: 9100}}}
}

// checkHairpin connects from ep to a Service whose endpoint is ep itself:
// it only works if the datapath masquerades the hairpin connection (else
// the reply never goes back through the node's conntrack), and the
// endpoint must see the connection come from another address.
func checkHairpin(t *testing.T, ep lab.Endpoint, svc datapath.Service) {
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
	connect(t, ep, netip.AddrPortFrom(svc.VIP, svc.Port), 5)
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
