package l7proxy

import (
	"context"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/engine/httpload"
	"github.com/cnibench/cnibench/internal/netnsx"
	"github.com/cnibench/cnibench/internal/nsexec"
	"github.com/cnibench/cnibench/lab"
	"github.com/cnibench/cnibench/lab/labtest"
)

// podRef is lab pod name as l7proxy wants it.
func podRef(t *testing.T, l *lab.Lab, name string) PodRef {
	t.Helper()
	p, err := LabPod(l, name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// serveHTTP runs cnibench's own HTTP server (any path gets 200) in pod's
// namespace until the test ends.
func serveHTTP(t *testing.T, pod PodRef) {
	t.Helper()
	s := &httpload.Server{Port: httpload.DefaultPort}
	if err := netnsx.Do(pod.Netns, s.Listen); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Serve(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
}

// TestModels runs every model on a 2-node lab (client node0-pod0, server
// node1-pod0): Verify passes (200 through every proxy of the model, 403
// from the enforcing one), the counters and CPU move, and Close leaves no
// process, rule, file or cgroup; then direct traffic flows again.
func TestModels(t *testing.T) {
	l := labtest.NewLab(t, "l7t")
	cli, srv := podRef(t, l, "node0-pod0"), podRef(t, l, "node1-pod0")
	serveHTTP(t, srv)
	addr := net.JoinHostPort(srv.IP, strconv.Itoa(httpload.DefaultPort))
	for _, m := range []Model{PerNode, PerNodeEgress, Sidecar} {
		t.Run(string(m), func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			before := rulesets(t, l)
			spec := Spec{Model: m, Rules: BenchRules, Port: httpload.DefaultPort, Client: cli, Servers: []PodRef{srv}}
			d, err := Start(ctx, spec, Options{Prefix: l.Prefix, StateDir: dir, CgroupParent: l.CgroupRoot})
			labtest.SkipIfUnsupported(t, err)
			if err != nil {
				t.Fatal(err)
			}
			if err := d.Verify(ctx); err != nil {
				d.Close()
				t.Fatal(err)
			}
			checkCounters(t, d, m)
			checkPooled(t, d, addr)
			if log := d.Log(); strings.Count(log, "\n") != len(d.Proxies) || strings.Contains(log, "ALERT") {
				t.Errorf("Log: want one line per proxy and no alert, got %q", log)
			}
			if u, err := d.CPU(); err != nil || u.Total <= 0 || len(u.ByProxy) != len(d.Proxies) {
				t.Errorf("CPU: %+v %v, want > 0 for every proxy", u, err)
			}
			closeAndCheck(t, d, dir)
			checkRulesets(t, before, rulesets(t, l))
			// Without the proxies the server answers directly.
			st, via, err := d.Probe(ctx, addr, "GET", DefaultDeniedPath)
			if err != nil || st != http.StatusOK || len(via) != 0 {
				t.Errorf("after Close: %d through %v (%v), want 200 straight from the server", st, via, err)
			}
		})
	}
}

// checkCounters: Verify sent one allowed and one denied request; every
// proxy saw both, the enforcing one denied one.
func checkCounters(t *testing.T, d *Deployment, m Model) {
	t.Helper()
	cs, err := d.Counters()
	if err != nil {
		t.Fatal(err)
	}
	wantN := map[Model]int{PerNode: 1, PerNodeEgress: 1, Sidecar: 2}[m]
	if len(cs) != wantN {
		t.Errorf("%d proxies, want %d: %v", len(cs), wantN, cs)
	}
	for name, c := range cs {
		enforcing := name == "node-node1" || name == "server-node1-pod0" || (m == PerNodeEgress && name == "node-node0")
		if c.Requests != 2 || (enforcing && c.Denied != 1) || (!enforcing && c.Denied != 0) {
			t.Errorf("%s: %+v, want 2 requests and %d denied", name, c, map[bool]int{true: 1}[enforcing])
		}
	}
}

// checkPooled sends 20 requests, each on a new client connection, and
// checks every proxy served most of them on pooled upstream connections,
// as Envoy would (http-reuse always, with the original destination).
func checkPooled(t *testing.T, d *Deployment, addr string) {
	t.Helper()
	for i := 0; i < 20; i++ {
		if st, _, err := d.Probe(context.Background(), addr, "GET", "/"); err != nil || st != http.StatusOK {
			t.Fatalf("request %d: %d %v", i, st, err)
		}
	}
	cs, err := d.Counters()
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range cs {
		if c.Reuses < 15 || c.Connects > 5 {
			t.Errorf("%s: %d upstream connects and %d reuses for %d requests: want the pool to serve most", name, c.Connects, c.Reuses, c.Requests)
		}
		t.Logf("%s: %+v", name, c)
	}
}

// closeAndCheck closes d twice and checks nothing of it is left.
func closeAndCheck(t *testing.T, d *Deployment, dir string) {
	t.Helper()
	pids := pidsOf(t, d)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	checkGone(t, d, dir, pids)
}

func pidsOf(t *testing.T, d *Deployment) []int {
	t.Helper()
	var pids []int
	for _, p := range d.Proxies {
		if p.PID == 0 || !netnsx.Alive(p.PID) {
			t.Fatalf("proxy %s has no live pid (%d)", p.Name, p.PID)
		}
		pids = append(pids, p.PID)
	}
	return pids
}

// checkGone checks that no process, nat rule, file or cgroup of d is left.
func checkGone(t *testing.T, d *Deployment, dir string, pids []int) {
	t.Helper()
	for _, p := range pids {
		if netnsx.Alive(p) {
			t.Errorf("haproxy pid %d still alive", p)
		}
	}
	for _, ns := range append(d.ruleNamespaces(), d.Spec.Client.Netns) {
		if n, err := countRules(context.Background(), ns, d.Opts.Prefix); err != nil || n != 0 {
			t.Errorf("%s: %d rules of ours left (%v)", ns, n, err)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("files left in the state dir: %v", ents)
	}
	for _, p := range d.Proxies {
		if _, err := os.Stat(p.Cgroup); p.Cgroup != "" && err == nil {
			t.Errorf("cgroup %s left", p.Cgroup)
		}
	}
}

// TestCleanupAfterCrash: a deployment never closed is removed by
// Cleanup alone: processes found by their config path, rules by the lab's
// namespaces. With its state file (in the lab's state dir, which survives
// a crash of the run) the nat tables and chains it created go too; with
// the state file lost they cannot be told from others' and stay.
func TestCleanupAfterCrash(t *testing.T) {
	l := labtest.NewLab(t, "l7c")
	cli, srv := podRef(t, l, "node0-pod0"), podRef(t, l, "node1-pod0")
	for _, lose := range []bool{false, true} {
		t.Run(map[bool]string{false: "state-kept", true: "state-lost"}[lose], func(t *testing.T) {
			dir := t.TempDir()
			before := rulesets(t, l)
			spec := Spec{Model: Sidecar, Rules: BenchRules, Port: httpload.DefaultPort, Client: cli, Servers: []PodRef{srv}}
			d, err := Start(context.Background(), spec, Options{Prefix: l.Prefix, StateDir: dir})
			labtest.SkipIfUnsupported(t, err)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := Start(context.Background(), spec, Options{Prefix: l.Prefix, StateDir: dir}); err == nil {
				t.Error("a second Start over a live deployment: want an error")
			}
			pids := pidsOf(t, d)
			if lose {
				os.Remove(stateFile(dir, l.Prefix))
			}
			if err := Cleanup(dir, l.Prefix); err != nil {
				t.Fatal(err)
			}
			checkGone(t, d, dir, pids)
			if !lose {
				checkRulesets(t, before, rulesets(t, l))
			}
			if err := Cleanup(dir, l.Prefix); err != nil {
				t.Errorf("second Cleanup: %v", err)
			}
		})
	}
}

// TestEgressService: the egress proxy captures the client's connections to
// a Service address and reaches the Service from its node through the nat
// OUTPUT translation a netfilter Service datapath keeps there (here one
// DNAT rule per hook, as kube-proxy's), which needs the route Start adds;
// Close removes the route with the rules.
func TestEgressService(t *testing.T) {
	l := labtest.NewLab(t, "l7e")
	cli, srv := podRef(t, l, "node0-pod0"), podRef(t, l, "node1-pod0")
	serveHTTP(t, srv)
	ctx := context.Background()
	const vip = "198.18.128.9"
	for _, chain := range []string{"PREROUTING", "OUTPUT"} {
		if _, err := nsexec.Run(ctx, cli.NodeNetns, nil, "iptables", "-w", "-t", "nat", "-A", chain, "-d", vip, "-p", "tcp", "--dport", "8080",
			"-j", "DNAT", "--to-destination", srv.IP+":8080"); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	spec := Spec{Model: PerNodeEgress, Rules: BenchRules, Port: httpload.DefaultPort, Client: cli, Servers: []PodRef{srv}, Services: []string{vip}}
	d, err := Start(ctx, spec, Options{Prefix: l.Prefix, StateDir: dir, CgroupParent: l.CgroupRoot})
	labtest.SkipIfUnsupported(t, err)
	if err != nil {
		t.Fatal(err)
	}
	addr := net.JoinHostPort(vip, "8080")
	st, via, err := d.Probe(ctx, addr, "GET", "/")
	if err != nil || st != http.StatusOK || !slices.Equal(via, []string{"node-node0"}) {
		t.Errorf("GET %s/: %d through %v (%v), want 200 through [node-node0]", addr, st, via, err)
	}
	if st, via, err := d.Probe(ctx, addr, "GET", DefaultDeniedPath); err != nil || st != http.StatusForbidden {
		t.Errorf("GET %s%s: %d through %v (%v), want 403 from node-node0", addr, DefaultDeniedPath, st, via, err)
	}
	routes := func() string {
		out, err := nsexec.Run(ctx, cli.NodeNetns, nil, "ip", "-4", "route", "show", "proto", routeProto)
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(out))
	}
	if r := routes(); !strings.Contains(r, vip) {
		t.Errorf("routes of proto %s: %q, want one to %s", routeProto, r, vip)
	}
	closeAndCheck(t, d, dir)
	if r := routes(); r != "" {
		t.Errorf("after Close: routes %q left", r)
	}
	// Without the proxy the Service answers directly.
	if st, via, err := d.Probe(ctx, addr, "GET", DefaultDeniedPath); err != nil || st != http.StatusOK || len(via) != 0 {
		t.Errorf("after Close: %d through %v (%v), want 200 straight from the server", st, via, err)
	}
}
