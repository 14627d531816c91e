package l7proxy

import (
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// goldenSpec is two servers on one node and one on another, a client on
// a third node.
func goldenSpec(m Model) Spec {
	pod := func(name, node, ip, nodeIP string) PodRef {
		return PodRef{Name: name, Node: node, Netns: "/run/netns/cnb-g-" + name, NodeNetns: "/run/netns/cnb-g-" + node, IP: ip, NodeIP: nodeIP}
	}
	return Spec{Model: m, Port: 8080, Services: []string{"198.18.128.1"},
		Rules:  []HTTPRule{{Method: "GET", Path: "/"}, {PathPrefix: "/api/"}, {Method: "HEAD"}},
		Client: pod("node2-pod0", "node2", "198.19.2.10", "198.18.0.12"),
		Servers: []PodRef{pod("node1-pod0", "node1", "198.19.1.10", "198.18.0.11"),
			pod("node0-pod0", "node0", "198.19.0.10", "198.18.0.10"), pod("node1-pod1", "node1", "198.19.1.11", "198.18.0.11")}}
}

// render is the whole plan of a Spec as text: each proxy's config, then
// the nat rules.
func render(s Spec) string {
	ps, rs := plan(s)
	var b strings.Builder
	for _, p := range ps {
		b.WriteString("## " + p.Name + " in " + p.Netns + "\n" + config(s, p, "cnb-g-l7-"+p.Name) + "\n")
	}
	for _, r := range rs {
		b.WriteString("## rule in " + r.Netns + ": -A " + r.Chain + " " + strings.Join(r.Args, " ") + "\n")
	}
	return b.String()
}

// TestPlanGolden compares the configs and rules of both models with
// testdata (go test -run TestPlanGolden -update rewrites them).
func TestPlanGolden(t *testing.T) {
	for _, m := range []Model{PerNode, PerNodeEgress, Sidecar} {
		s := goldenSpec(m)
		if err := s.Validate(); err != nil {
			t.Fatal(err)
		}
		got := render(s)
		file := filepath.Join("testdata", string(m)+".golden")
		if *update {
			os.WriteFile(file, []byte(got), 0o644)
		}
		want, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if got != string(want) {
			t.Errorf("%s plan differs from %s:\n%s", m, file, got)
		}
	}
}

// TestPerNodePortPerPod: a per-node proxy listens on a port per
// destination (pod or Service) and each destination's DNAT goes to its
// own, so that a client port's connections to two pods never share a
// reply tuple (planPerNode says what sharing one cost).
func TestPerNodePortPerPod(t *testing.T) {
	for _, m := range []Model{PerNode, PerNodeEgress} {
		ps, rs := plan(goldenSpec(m))
		targets := map[string]string{} // DNAT target -> destination
		for _, r := range rs {
			to, dst := r.Args[len(r.Args)-1], r.Args[slices.Index(r.Args, "-d")+1]
			if other, ok := targets[to]; ok {
				t.Errorf("%s: %s and %s are both DNATed to %s", m, other, dst, to)
			}
			targets[to] = dst
		}
		for _, p := range ps {
			for _, b := range p.Binds {
				delete(targets, b)
			}
		}
		if len(targets) > 0 {
			t.Errorf("%s: DNAT targets no proxy listens on: %v", m, targets)
		}
	}
}

// TestConfigValid has haproxy itself check every generated config.
func TestConfigValid(t *testing.T) {
	if _, err := exec.LookPath("haproxy"); err != nil {
		t.Skip("no haproxy")
	}
	for _, m := range []Model{PerNode, PerNodeEgress, Sidecar} {
		s := goldenSpec(m)
		ps, _ := plan(s)
		for _, p := range ps {
			f := filepath.Join(t.TempDir(), "c.cfg")
			os.WriteFile(f, []byte(config(s, p, "cnb-g-check")), 0o644)
			if out, err := exec.Command("haproxy", "-c", "-f", f).CombinedOutput(); err != nil {
				t.Errorf("%s: haproxy -c: %v\n%s", p.Name, err, out)
			}
		}
	}
}

func TestValidate(t *testing.T) {
	bad := map[string]func(*Spec){
		"model":           func(s *Spec) { s.Model = "mesh" },
		"no rules":        func(s *Spec) { s.Rules = nil },
		"lower method":    func(s *Spec) { s.Rules[0].Method = "get" },
		"path and prefix": func(s *Spec) { s.Rules[0].PathPrefix = "/x" },
		"path with space": func(s *Spec) { s.Rules[0].Path = "/a b" },
		"relative path":   func(s *Spec) { s.Rules[1].PathPrefix = "api" },
		"port":            func(s *Spec) { s.Port = 0 },
		"no servers":      func(s *Spec) { s.Servers = nil },
		"ipv6":            func(s *Spec) { s.Servers[0].IP = "fd00::1" },
		"service ipv6":    func(s *Spec) { s.Services = []string{"fd00::1"} },
		"no netns":        func(s *Spec) { s.Client.Netns = "" },
		"allowed denied":  func(s *Spec) { s.DeniedPath = "/api/x" },
	}
	for name, f := range bad {
		s := goldenSpec(Sidecar)
		f(&s)
		if err := s.Validate(); err == nil {
			t.Errorf("%s: Validate accepted %+v", name, s)
		} else if strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error on several lines: %v", name, err)
		}
	}
	// BenchRules allow cnibench's own requests and deny the probe.
	s := Spec{Rules: BenchRules}
	if !s.allows("GET", "/") || s.allows("GET", DefaultDeniedPath) || s.allows("POST", "/") {
		t.Error("BenchRules: want GET / allowed, GET " + DefaultDeniedPath + " and POST / denied")
	}
}

// TestParseStat reads "show stat" of HAProxy 2.6.12 after 4 allowed and 4
// denied requests (to an HTTP/1.0 server: no reuse).
func TestParseStat(t *testing.T) {
	f, err := os.Open(filepath.Join("testdata", "show-stat.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c, err := parseStat(f)
	if err != nil {
		t.Fatal(err)
	}
	if c != (Counters{Requests: 8, Denied: 4, Connects: 5}) {
		t.Errorf("got %+v, want 8 requests, 4 denied, 5 connects", c)
	}
	if _, err := parseStat(strings.NewReader("# pxname,svname,req_tot,dreq\nin,FRONTEND,3,1\n")); err == nil {
		t.Error("no server row: want an error")
	}
}

func TestTaggedRules(t *testing.T) {
	save := `# Generated by iptables-nft-save v1.8.9
*nat
:PREROUTING ACCEPT [0:0]
-A PREROUTING -d 198.19.1.10/32 -p tcp -m tcp --dport 8080 -m comment --comment cnb-x-l7proxy -j DNAT --to-destination 198.18.0.11:15001
-A PREROUTING -d 198.19.1.10/32 -p tcp -m comment --comment cnb-y-l7proxy -j ACCEPT
-A OUTPUT -p tcp -m comment --comment "cnb-x-l7proxy" -j REDIRECT --to-ports 15001
COMMIT
`
	got := taggedRules(save, "cnb-x-l7proxy")
	if len(got) != 2 || got[0][0] != "-D" || got[0][1] != "PREROUTING" || got[1][1] != "OUTPUT" {
		t.Errorf("got %q, want the two cnb-x rules as -D", got)
	}
}
