package ambient

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/cnibench/cnibench/engine/httpload"
	"github.com/cnibench/cnibench/internal/netnsx"
	"github.com/cnibench/cnibench/lab"
	"github.com/cnibench/cnibench/lab/haproxy"
	"github.com/cnibench/cnibench/lab/l7proxy"
	"github.com/cnibench/cnibench/lab/labtest"
)

// TestLabDownAfterCrash leaves a mesh and its waypoint running as a
// crashed run would (no Close) and takes the lab down: no proxy, file,
// cgroup or namespace of the lab is left. Then Cleanup of what is gone
// is a no-op.
func TestLabDownAfterCrash(t *testing.T) {
	labtest.NeedRoot(t)
	cfg := lab.Config{Name: fmt.Sprintf("ambc%06d", rand.IntN(1000000)), Nodes: 2, PodsPerNode: 1, StateDir: t.TempDir()}
	down := false
	t.Cleanup(func() {
		if !down {
			lab.Down(cfg.StateDir, cfg.Name)
		}
	})
	l, err := lab.Up(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(cfg.StateDir, cfg.Name)
	spec := FromLab(l)
	spec.Waypoint = "node1"
	m, err := Start(context.Background(), spec, Options{Prefix: l.Prefix, Lab: cfg.Name, StateDir: dir, CgroupParent: l.CgroupRoot})
	labtest.SkipIfUnsupported(t, err)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.StartWaypoint(context.Background(), WaypointSpec{Rules: l7proxy.BenchRules, Dests: []string{fmt.Sprintf("%s:%d", l.Nodes[1].Pods[0].IP, httpload.DefaultPort)}}); err != nil {
		t.Fatal(err)
	}
	if pids := haproxy.OwnPids(filePrefix(dir, l.Prefix)); len(pids) != 3 {
		t.Fatalf("%d proxies, want 2 node proxies and the waypoint", len(pids))
	}
	down = true
	if _, err := lab.Down(cfg.StateDir, cfg.Name); err != nil {
		t.Fatal(err)
	}
	if pids := haproxy.OwnPids(filePrefix(dir, l.Prefix)); len(pids) != 0 {
		t.Errorf("proxies left after lab down: %v", pids)
	}
	if _, err := os.Stat(dir); err == nil {
		t.Errorf("state dir %s left", dir)
	}
	if l.CgroupRoot != "" {
		if _, err := os.Stat(l.CgroupRoot); err == nil {
			t.Errorf("cgroup root %s left", l.CgroupRoot)
		}
	}
	if named, err := netnsx.ListNamed(l.Prefix); err != nil || len(named) != 0 {
		t.Errorf("namespaces left: %v %v", named, err)
	}
	if err := Cleanup(dir, l.Prefix); err != nil {
		t.Errorf("Cleanup after lab down: %v", err)
	}
}

// TestCleanupAfterCrash leaves a mesh and its waypoint, started without
// cgroups (their CPU read from /proc), running on a lab that stays up, as
// a crashed run would, and sweeps them as the next run does (Cleanup): no
// process, rule, route or file is left, and the nodes' nat tables and
// routes are as before.
func TestCleanupAfterCrash(t *testing.T) {
	l := labtest.NewLab(t, "ambs")
	dir := t.TempDir()
	before := nodeState(t, l.Nodes[0].Netns, l.Nodes[1].Netns)
	spec := FromLab(l)
	spec.Waypoint = "node1"
	m, err := Start(context.Background(), spec, Options{Prefix: l.Prefix, Lab: l.Config.Name, StateDir: dir})
	labtest.SkipIfUnsupported(t, err)
	if err != nil {
		t.Fatal(err)
	}
	w, err := m.StartWaypoint(context.Background(), WaypointSpec{Rules: l7proxy.BenchRules, Dests: []string{fmt.Sprintf("%s:%d", l.Nodes[1].Pods[0].IP, httpload.DefaultPort)}})
	if err != nil {
		t.Fatal(err)
	}
	if cpu, err := m.CPU(); err != nil || len(cpu) != 2 {
		t.Errorf("node proxies' CPU without cgroups: %v %v", cpu, err)
	}
	if _, err := w.CPU(); err != nil {
		t.Errorf("waypoint CPU without a cgroup: %v", err)
	}
	if err := Cleanup(dir, l.Prefix); err != nil {
		t.Fatal(err)
	}
	if pids := haproxy.OwnPids(filePrefix(dir, l.Prefix)); len(pids) != 0 {
		t.Errorf("proxies left: %v", pids)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("files left: %v", ents)
	}
	if after := nodeState(t, l.Nodes[0].Netns, l.Nodes[1].Netns); after != before {
		t.Errorf("nodes changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}
