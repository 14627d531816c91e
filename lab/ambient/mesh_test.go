package ambient

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/engine/httpload"
	"github.com/cnibench/cnibench/internal/netnsx"
	"github.com/cnibench/cnibench/internal/nsexec"
	"github.com/cnibench/cnibench/lab/haproxy"
	"github.com/cnibench/cnibench/lab/labtest"
)

// TestMesh brings the mesh up on a 2-node lab: the proof passes (the
// probe crosses in TLS, the proxies count it), then fails once the
// capture rules are gone (the payload crosses in clear), and Close
// leaves no process, rule, route, file or cgroup.
func TestMesh(t *testing.T) {
	l := labtest.NewLab(t, "amb")
	ctx := context.Background()
	dir := t.TempDir()
	before := nodeState(t, l.Nodes[0].Netns, l.Nodes[1].Netns)
	m, err := Start(ctx, FromLab(l), Options{Prefix: l.Prefix, Lab: l.Config.Name, StateDir: dir, CgroupParent: l.CgroupRoot})
	labtest.SkipIfUnsupported(t, err)
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			m.Close()
		}
	})
	from, err := LabPod(l, "node0-pod0")
	if err != nil {
		t.Fatal(err)
	}
	to, err := LabPod(l, "node1-pod0")
	if err != nil {
		t.Fatal(err)
	}
	line, err := m.Prove(ctx, from, to)
	if err != nil {
		t.Fatalf("%v\nproxy logs: %s", err, logs(m))
	}
	t.Log(line)
	if back, err := m.Prove(ctx, to, from); err != nil {
		t.Errorf("the other way: %v", err)
	} else if !strings.Contains(back, "node1-pod0 → node0-pod0") {
		t.Errorf("the other way: %s", back)
	}
	serveHTTP(t, to)
	if line, err := m.ProveHTTP(ctx, from, net.JoinHostPort(to.IP, strconv.Itoa(httpload.DefaultPort))); err != nil {
		t.Errorf("HTTP through the mesh: %v", err)
	} else {
		t.Log(line)
	}
	if cpu, err := m.CPU(); err == nil && cpu["ztunnel-node0"] <= 0 {
		t.Errorf("CPU: %v, want > 0 for the proxies", cpu)
	}
	if err := m.Unwire(ctx); err != nil {
		t.Fatal(err)
	}
	if line, err := m.Prove(ctx, from, to); err == nil || !strings.Contains(err.Error(), "in clear") {
		t.Errorf("without the capture rules the proof says %q, %v; want it to fail: payload in clear", line, err)
	}
	if line, err := m.ProveHTTP(ctx, from, net.JoinHostPort(to.IP, strconv.Itoa(httpload.DefaultPort))); err == nil || !strings.Contains(err.Error(), "want 200 through a tunnel") {
		t.Errorf("without the capture rules the HTTP proof says %q, %v; want it to fail: no tunnel", line, err)
	}
	pids := haproxy.OwnPids(filePrefix(dir, l.Prefix))
	if len(pids) != 2 {
		t.Errorf("%d proxy processes, want 2", len(pids))
	}
	closed = true
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if pids := haproxy.OwnPids(filePrefix(dir, l.Prefix)); len(pids) != 0 {
		t.Errorf("processes left: %v", pids)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("files left in the state dir: %v", ents)
	}
	if cgs, _ := filepath.Glob(filepath.Join(l.CgroupRoot, "amb-*")); l.CgroupRoot != "" && len(cgs) != 0 {
		t.Errorf("cgroups left: %v", cgs)
	}
	if after := nodeState(t, l.Nodes[0].Netns, l.Nodes[1].Netns); after != before {
		t.Errorf("nodes' nat table and routes changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

// serveHTTP runs cnibench's own HTTP server (any path gets 200) in pod's
// namespace until the test ends.
func serveHTTP(t *testing.T, pod Pod) {
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

// nodeState is the nodes' nat ruleset and routes, to compare.
func nodeState(t *testing.T, nss ...string) string {
	t.Helper()
	var b strings.Builder
	for _, n := range nss {
		ns := "/run/netns/" + n
		nat, _ := nsexec.Run(context.Background(), ns, nil, "nft", "list", "table", "ip", "nat")
		rt, err := nsexec.Run(context.Background(), ns, nil, "ip", "-4", "route", "show", "table", "all")
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString(n + ":\n" + string(nat) + string(rt))
	}
	return b.String()
}

// logs is each proxy's log, for a failed test.
func logs(m *Mesh) string {
	var b strings.Builder
	for _, p := range m.Proxies {
		out, _ := os.ReadFile(p.Log)
		b.WriteString(p.Node + ": " + string(out) + "\n")
	}
	return b.String()
}
