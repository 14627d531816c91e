package lab

import (
	"reflect"
	"strings"
	"testing"
)

// The plan is pure: these tests need no root and compare against the
// addresses and names the package comment promises.

func TestPlanNative(t *testing.T) {
	l := plan(Config{Name: "x", Nodes: 3, PodsPerNode: 2}, "/sys/fs/cgroup/cnb-x")
	if l.Prefix != "cnb-x-" || l.Underlay != "cnb-x-underlay" || l.Routing != RoutingNative || l.MTU != 1500 {
		t.Errorf("lab: prefix %q underlay %q routing %q mtu %d", l.Prefix, l.Underlay, l.Routing, l.MTU)
	}
	want := Node{
		Name: "node2", Netns: "cnb-x-node2", IP: "198.18.0.12", PodCIDR: "198.19.2.0/24",
		Cgroup: "/sys/fs/cgroup/cnb-x/node2",
		Pods: []Pod{
			{Name: "node2-pod0", Node: "node2", Netns: "cnb-x-node2-pod0", IP: "198.19.2.10", Cgroup: "/sys/fs/cgroup/cnb-x/node2-pod0"},
			{Name: "node2-pod1", Node: "node2", Netns: "cnb-x-node2-pod1", IP: "198.19.2.11", Cgroup: "/sys/fs/cgroup/cnb-x/node2-pod1"},
		},
	}
	if len(l.Nodes) != 3 || !reflect.DeepEqual(l.Nodes[2], want) {
		t.Fatalf("node2:\n got %+v\nwant %+v", l.Nodes[2], want)
	}
	ns := []string{"cnb-x-underlay", "cnb-x-node0", "cnb-x-node0-pod0", "cnb-x-node0-pod1",
		"cnb-x-node1", "cnb-x-node1-pod0", "cnb-x-node1-pod1", "cnb-x-node2", "cnb-x-node2-pod0", "cnb-x-node2-pod1"}
	if got := l.namespaces(); !reflect.DeepEqual(got, ns) {
		t.Errorf("namespaces:\n got %q\nwant %q", got, ns)
	}
	var routes []string
	for _, r := range l.peerRoutes(1) {
		routes = append(routes, r.Peer.Name+" "+r.Dst+" via "+r.Via)
	}
	wantRoutes := []string{"node0 198.19.0.0/24 via 198.18.0.10", "node2 198.19.2.0/24 via 198.18.0.12"}
	if !reflect.DeepEqual(routes, wantRoutes) {
		t.Errorf("node1 routes: got %q, want %q", routes, wantRoutes)
	}
}

func TestPlanVXLAN(t *testing.T) {
	l := plan(Config{Name: "v", Nodes: 12, PodsPerNode: 1, Routing: RoutingVXLAN}, "")
	if l.MTU != 1450 {
		t.Errorf("mtu %d, want 1450", l.MTU)
	}
	n := l.Nodes[11]
	if n.VTEP != "198.19.11.0" || n.VTEPMAC != "02:cb:00:00:00:0b" || n.Cgroup != "" || n.Pods[0].Cgroup != "" {
		t.Errorf("node11: %+v", n)
	}
	r := l.peerRoutes(0)
	if len(r) != 11 || r[0].Dst != "198.19.1.0/24" || r[0].Via != "198.19.1.0" || r[10].Dst != "198.19.11.0/24" || r[10].Via != "198.19.11.0" {
		t.Errorf("node0 routes: %+v", r)
	}
}

func TestPlanNames(t *testing.T) {
	if bridgePort(3) != "cnbn3" || hostIf(31) != "cnbp31" {
		t.Errorf("bridgePort(3) %q hostIf(31) %q", bridgePort(3), hostIf(31))
	}
	// Forwarding and the other devconf keys, for default, all and lo;
	// the underlay adds the optional bridge-netfilter keys.
	values := func(kind string) map[string]string {
		m := map[string]string{}
		for _, s := range baseSysctls(kind) {
			m[s.key] = s.value
			if s.optional != strings.HasPrefix(s.key, "net.bridge.") {
				t.Errorf("%s: %s optional = %v", kind, s.key, s.optional)
			}
		}
		return m
	}
	for kind, fwd := range map[string]string{kindUnderlay: "0", kindNode: "1", kindPod: "0"} {
		m := values(kind)
		for _, dev := range []string{"all", "default", "lo"} {
			if m["net.ipv4.conf."+dev+".forwarding"] != fwd || m["net.ipv4.conf."+dev+".rp_filter"] != "0" || m["net.ipv4.conf."+dev+".route_localnet"] != "0" {
				t.Errorf("%s sysctls %v", kind, m)
			}
		}
		if want := map[string]int{kindUnderlay: 3*9 + 3, kindNode: 3 * 9, kindPod: 3 * 9}[kind]; len(m) != want {
			t.Errorf("%s: %d sysctls, want %d", kind, len(m), want)
		}
	}
	if got := sortedKeys(map[string]string{"net.b": "1", "net.a": "2", "net.c": "3"}); strings.Join(got, ",") != "net.a,net.b,net.c" {
		t.Errorf("sortedKeys %v", got)
	}
}

func TestTeardownOrder(t *testing.T) {
	names := []string{"cnb-x-underlay", "cnb-x-node0", "cnb-x-node10", "cnb-x-node0-pod0", "cnb-x-node10-pod1", "cnb-x-node1-pod0"}
	teardownOrder(names)
	want := []string{"cnb-x-node10-pod1", "cnb-x-node0-pod0", "cnb-x-node1-pod0", "cnb-x-underlay", "cnb-x-node10", "cnb-x-node0"}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("got %q, want %q", names, want)
	}
}

func TestLabNameOf(t *testing.T) {
	for in, want := range map[string]string{
		"cnb-abc":            "abc",
		"cnb-abc-node0-pod1": "abc",
		"cnb-ABC-node0":      "",
		"cnb-":               "",
		"cnbabc":             "",
		"xcnb-abc":           "",
	} {
		if got := labNameOf(in); got != want {
			t.Errorf("labNameOf(%q) = %q, want %q", in, got, want)
		}
	}
}
