package ambient

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/lab/l7proxy"
)

var testSpec = Spec{ServiceCIDR: "198.18.128.0/17", Nodes: []Node{
	{Name: "node0", Netns: "/run/netns/cnb-t-node0", IP: "198.18.0.10", PodCIDR: "198.19.0.0/24", Pods: []string{"198.19.0.10", "198.19.0.11"}, Uplink: "eth0"},
	{Name: "node1", Netns: "/run/netns/cnb-t-node1", IP: "198.18.0.11", PodCIDR: "198.19.1.0/24", Pods: []string{"198.19.1.10", "198.19.1.11"}, Uplink: "eth0"},
}}

// TestConfig: the outbound port takes the pods' traffic, sends the node's
// own pods plain and everything else in verified TLS; the inbound port
// accepts only verified TLS and delivers to the original destination.
func TestConfig(t *testing.T) {
	c := config(testSpec, testSpec.Nodes[1], files{CA: "/s/ca.pem", Cert: "/s/node1.pem", Stats: "cnb-t-amb-node1"})
	for _, want := range []string{
		"mode tcp",
		"stats socket abns@cnb-t-amb-node1 level operator",
		"frontend outbound\n    bind 198.18.0.11:15001\n",
		"use_backend local if { dst 198.19.1.0/24 }\n    default_backend tunnel\n",
		"backend tunnel\n    server tunnel 0.0.0.0:0 ssl verify required ca-file /s/ca.pem crt /s/node1.pem\n",
		"backend local\n    server local 0.0.0.0:0\n",
		"frontend inbound\n    bind 198.18.0.11:15008 ssl crt /s/node1.pem ca-file /s/ca.pem verify required\n    bind 198.18.0.11:15009 ssl crt /s/node1.pem ca-file /s/ca.pem verify required\n",
		"backend deliver\n    server deliver 0.0.0.0:0",
		"ssl-min-ver TLSv1.3",
	} {
		if !strings.Contains(c, want) {
			t.Errorf("config lacks %q:\n%s", want, c)
		}
	}
	if strings.Contains(c, "verify none") {
		t.Errorf("config turns verification off:\n%s", c)
	}
}

// TestRules: every node captures its pods' TCP to every pod CIDR and the
// Service CIDR into its outbound port, and TCP to its pods from elsewhere
// into its TLS port.
func TestRules(t *testing.T) {
	rs := rules(testSpec)
	got := map[string]bool{}
	for _, r := range rs {
		got[r.Netns+" "+r.Chain+" "+strings.Join(r.Args, " ")] = true
	}
	want := []string{
		"/run/netns/cnb-t-node0 PREROUTING -p tcp -s 198.19.0.0/24 -d 198.19.0.0/24 -j DNAT --to-destination 198.18.0.10:15001",
		"/run/netns/cnb-t-node0 PREROUTING -p tcp -s 198.19.0.0/24 -d 198.19.1.0/24 -j DNAT --to-destination 198.18.0.10:15001",
		"/run/netns/cnb-t-node0 PREROUTING -p tcp -s 198.19.0.0/24 -d 198.18.128.0/17 -j DNAT --to-destination 198.18.0.10:15001",
		"/run/netns/cnb-t-node0 PREROUTING -p tcp ! -s 198.19.0.0/24 -d 198.19.0.10/32 -j DNAT --to-destination 198.18.0.10:15008",
		"/run/netns/cnb-t-node0 PREROUTING -p tcp ! -s 198.19.0.0/24 -d 198.19.0.11/32 -j DNAT --to-destination 198.18.0.10:15009",
		"/run/netns/cnb-t-node1 PREROUTING -p tcp -s 198.19.1.0/24 -d 198.19.0.0/24 -j DNAT --to-destination 198.18.0.11:15001",
		"/run/netns/cnb-t-node1 PREROUTING -p tcp -s 198.19.1.0/24 -d 198.19.1.0/24 -j DNAT --to-destination 198.18.0.11:15001",
		"/run/netns/cnb-t-node1 PREROUTING -p tcp -s 198.19.1.0/24 -d 198.18.128.0/17 -j DNAT --to-destination 198.18.0.11:15001",
		"/run/netns/cnb-t-node1 PREROUTING -p tcp ! -s 198.19.1.0/24 -d 198.19.1.10/32 -j DNAT --to-destination 198.18.0.11:15008",
		"/run/netns/cnb-t-node1 PREROUTING -p tcp ! -s 198.19.1.0/24 -d 198.19.1.11/32 -j DNAT --to-destination 198.18.0.11:15009",
	}
	if len(rs) != len(want) {
		t.Errorf("%d rules, want %d: %v", len(rs), len(want), got)
	}
	for _, w := range want {
		if !got[w] {
			t.Errorf("missing rule %q", w)
		}
	}
	if a := rs[0].insertArgs("cnb-t-ambient"); strings.Join(a[:6], " ") != "-w -t nat -I PREROUTING 1" || a[len(a)-1] != "cnb-t-ambient" {
		t.Errorf("insertArgs: %v", a)
	}
}

// TestCerts: each node's certificate chains to the run's CA for both
// server and client use, names the node's address and SPIFFE identity,
// and carries its key; another run's CA does not verify it.
func TestCerts(t *testing.T) {
	cs, err := newCerts(testSpec, "lab1")
	if err != nil {
		t.Fatal(err)
	}
	other, err := newCerts(testSpec, "lab1")
	if err != nil {
		t.Fatal(err)
	}
	pool, otherPool := x509.NewCertPool(), x509.NewCertPool()
	pool.AppendCertsFromPEM(cs.CA)
	otherPool.AppendCertsFromPEM(other.CA)
	for _, n := range testSpec.Nodes {
		_, err := tls.X509KeyPair(cs.Nodes[n.Name], cs.Nodes[n.Name])
		if err != nil {
			t.Fatalf("%s: %v", n.Name, err)
		}
		blk, _ := pem.Decode(cs.Nodes[n.Name])
		c, err := x509.ParseCertificate(blk.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
			if _, err := c.Verify(x509.VerifyOptions{Roots: pool, DNSName: n.IP, KeyUsages: []x509.ExtKeyUsage{u}}); err != nil {
				t.Errorf("%s usage %v: %v", n.Name, u, err)
			}
		}
		if _, err := c.Verify(x509.VerifyOptions{Roots: otherPool}); err == nil {
			t.Errorf("%s: verified by another run's CA", n.Name)
		}
		if len(c.URIs) != 1 || c.URIs[0].String() != "spiffe://cnibench.lab/lab1/"+n.Name {
			t.Errorf("%s: URIs %v", n.Name, c.URIs)
		}
	}
}

// TestParseStat reads HAProxy 2.6's "show stat" of an ambient proxy.
func TestParseStat(t *testing.T) {
	csv := "# pxname,svname,qcur,qmax,scur,smax,slim,stot,bin\n" +
		"outbound,FRONTEND,,,0,1,4096,7,100\n" +
		"tunnel,tunnel,0,0,0,1,,5,100\n" +
		"tunnel,BACKEND,0,0,0,1,410,5,100\n" +
		"local,BACKEND,0,0,0,1,410,2,100\n" +
		"inbound,FRONTEND,,,0,1,4096,3,100\n" +
		"deliver,BACKEND,0,0,0,1,410,3,100\n"
	c, err := parseStat(strings.NewReader(csv))
	if err != nil || c != (Counters{Outbound: 7, Tunnels: 5, Inbound: 3}) {
		t.Errorf("got %+v %v", c, err)
	}
	if _, err := parseStat(strings.NewReader("# pxname,svname,stot\noutbound,FRONTEND,1\n")); err == nil {
		t.Error("rows missing: no error")
	}
}

// TestValidate: bad input gets a one-line error.
func TestValidate(t *testing.T) {
	if err := testSpec.Validate(); err != nil {
		t.Fatal(err)
	}
	bad := testSpec
	bad.Nodes = append([]Node{}, testSpec.Nodes...)
	bad.Nodes[1].IP = "fe80::1"
	if err := bad.Validate(); err == nil || strings.Contains(err.Error(), "\n") {
		t.Errorf("IPv6 node address: %v", err)
	}
	bad.Nodes[1] = testSpec.Nodes[0]
	if err := bad.Validate(); err == nil {
		t.Error("a node twice: no error")
	}
	bad.Nodes[1] = testSpec.Nodes[1]
	bad.Nodes[1].Pods = []string{"198.19.0.10"}
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "not in its pod CIDR") {
		t.Errorf("a pod outside its node's CIDR: %v", err)
	}
}

// TestWaypointConfig: with a waypoint node the node proxies get a port
// whose connections go to it in mTLS with the original destination in a
// PROXY header; the waypoint takes that header behind verified TLS,
// enforces the rules and delivers plain only to its node's pods and
// ClusterIPs, in TLS elsewhere.
func TestWaypointConfig(t *testing.T) {
	s := testSpec
	s.Waypoint = "node1"
	f := files{CA: "/s/ca.pem", Cert: "/s/node0.pem", Stats: "cnb-t-amb-node0"}
	if c := config(s, s.Nodes[0], f); !strings.Contains(c, "frontend to-waypoint\n    bind 198.18.0.10:15002\n") ||
		!strings.Contains(c, "server waypoint 198.18.0.11:15072 ssl verify required ca-file /s/ca.pem crt /s/node0.pem send-proxy-v2\n") {
		t.Errorf("node proxy config lacks the waypoint:\n%s", c)
	}
	if c := config(testSpec, testSpec.Nodes[0], f); strings.Contains(c, "waypoint") {
		t.Errorf("no waypoint node, yet:\n%s", c)
	}
	wf := files{CA: "/s/ca.pem", Cert: "/s/waypoint.pem", Stats: "cnb-t-amb-waypoint"}
	c := waypointConfig(s, s.Nodes[1], WaypointSpec{Rules: l7proxy.BenchRules, Dests: []string{"198.19.1.10:8080"}}, wf)
	for _, want := range []string{
		"bind 198.18.0.11:15072 ssl crt /s/waypoint.pem ca-file /s/ca.pem verify required accept-proxy\n",
		"http-request allow if { method GET } { path / }\n    http-request deny deny_status 403\n",
		"http-after-response add-header X-Cnb-L7-Proxy waypoint\n",
		"use_backend local if { dst 198.19.1.0/24 198.18.128.0/17 }\n    default_backend tunnel\n",
		"server tunnel 0.0.0.0:0 ssl verify required ca-file /s/ca.pem crt /s/waypoint.pem\n",
	} {
		if !strings.Contains(c, want) {
			t.Errorf("waypoint config lacks %q:\n%s", want, c)
		}
	}
	rs := waypointRules(s, WaypointSpec{Dests: []string{"198.19.1.10:8080"}})
	if len(rs) != 2 || strings.Join(rs[0].Args, " ") != "-p tcp -s 198.19.0.0/24 -d 198.19.1.10/32 --dport 8080 -j DNAT --to-destination 198.18.0.10:15002" {
		t.Errorf("waypoint rules: %+v", rs)
	}
	if err := (WaypointSpec{Rules: l7proxy.BenchRules, Dests: []string{"pod:80"}}).Validate(); err == nil {
		t.Error("bad destination: no error")
	}
}
