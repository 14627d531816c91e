package ambient

import (
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/engine/httpload"
	"github.com/cnibench/cnibench/lab/haproxy"
	"github.com/cnibench/cnibench/lab/l7proxy"
	"github.com/cnibench/cnibench/lab/labtest"
)

// TestWaypoint puts a waypoint on node1 in front of two HTTP servers, one
// on its node and one on node0 (reached back through node0's proxy in
// mTLS): from node0-pod0 GET / gets 200 through it and the denied path
// 403 from it; other ports still go through the mesh; closed, the
// servers answer directly again and nothing of it is left.
func TestWaypoint(t *testing.T) {
	l := labtest.NewLabSized(t, "ambw", 2, 2)
	ctx := context.Background()
	dir := t.TempDir()
	spec := FromLab(l)
	spec.Waypoint = "node1"
	m, err := Start(ctx, spec, Options{Prefix: l.Prefix, Lab: l.Config.Name, StateDir: dir, CgroupParent: l.CgroupRoot})
	labtest.SkipIfUnsupported(t, err)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	pod := func(name string) Pod {
		p, err := LabPod(l, name)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	client, far, near := pod("node0-pod0"), pod("node1-pod0"), pod("node0-pod1")
	var dests []string
	for _, s := range []Pod{far, near} {
		serveHTTP(t, s)
		dests = append(dests, net.JoinHostPort(s.IP, strconv.Itoa(httpload.DefaultPort)))
	}
	w, err := m.StartWaypoint(ctx, WaypointSpec{Rules: l7proxy.BenchRules, Dests: dests})
	if err != nil {
		t.Fatalf("%v\nlogs: %s", err, logs(m))
	}
	lines, err := w.Prove(ctx, client, l7proxy.DefaultDeniedPath)
	if err != nil {
		wl, _ := os.ReadFile(w.Proxy.Log)
		t.Fatalf("%v\nwaypoint log: %s\nlogs: %s", err, wl, logs(m))
	}
	t.Log(strings.Join(lines, "; "))
	if _, err := m.Prove(ctx, client, far); err != nil {
		t.Errorf("the mesh beside the waypoint: %v", err)
	}
	if c, err := w.CPU(); err == nil && c <= 0 {
		t.Errorf("waypoint CPU %v, want > 0", c)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	st, via, err := httpGet(ctx, client, dests[0], l7proxy.DefaultDeniedPath)
	if err != nil || st != http.StatusOK || via != "" {
		t.Errorf("after the waypoint closed: %d through %q (%v), want 200 from the server itself", st, via, err)
	}
	if pids := haproxy.OwnPids(filePrefix(dir, l.Prefix) + waypointName); len(pids) != 0 {
		t.Errorf("waypoint processes left: %v", pids)
	}
	if cg := filepath.Join(l.CgroupRoot, "amb-"+waypointName); l.CgroupRoot != "" {
		if _, err := os.Stat(cg); err == nil {
			t.Errorf("waypoint cgroup left: %s", cg)
		}
	}
	for _, n := range m.Spec.Nodes {
		if c, err := l7proxy.CountTaggedNat(ctx, n.Netns, waypointTag(l.Prefix)); err != nil || c != 0 {
			t.Errorf("%s: %d waypoint rules left (%v)", n.Name, c, err)
		}
	}
}
