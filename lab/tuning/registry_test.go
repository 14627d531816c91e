package tuning

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"
	"sigs.k8s.io/knftables"
)

// Scenario parts map onto tunings: the fixed ones by name, any
// congestion control by "cc-<name>"; anything else is no tuning.
func TestLookup(t *testing.T) {
	for part, want := range map[string]string{"cc-bbr": "cc-bbr", "cc-cubic": "cc-cubic", "gro-off": "gro-off", "gso-off": "gso-off",
		"notrack": "notrack", "busy-poll": "busy-poll", "mtu-9000": "mtu-9000", "mtu-1500": "mtu-1500"} {
		k, ok := Lookup(part)
		if !ok || k.Name() != want || k.About() == "" {
			t.Errorf("%s: %v %v", part, k, ok)
		}
	}
	for _, part := range []string{"cc-", "cc-BBR", "cc-bbr;rm", "gro", "ebpf", "cc-" + strings.Repeat("x", 17), "mtu-100", "mtu-65536", "mtu-9k", "mtu-"} {
		if _, ok := Lookup(part); ok {
			t.Errorf("%q is a tuning", part)
		}
	}
	if d := Describe(); !strings.Contains(d, "cc-ALGO") || !strings.Contains(d, "notrack") || !strings.Contains(d, "mtu-N") {
		t.Errorf("describe:\n%s", d)
	}
}

// A tuning that cannot apply is not applicable before anything is
// touched, with the reason; only nodes get notrack.
func TestRunNotApplicable(t *testing.T) {
	c, undo := Run(context.Background(), busyPoll{}, []Site{{Name: "node0", Node: true}})
	if c.Status != NotApplicable || !strings.Contains(c.Detail, "host-wide") || strings.Contains(c.Detail, "not applicable") || c.Sites != 0 || undo() != nil {
		t.Errorf("busy-poll: %+v", c)
	}
	if !errors.Is(busyPoll{}.Applicable(), ErrNotApplicable) {
		t.Error("busy-poll applicable")
	}
	sites := []Site{{Name: "node0", Node: true}, {Name: "node0-pod0"}, {Name: "node1", Node: true}}
	if got := Sites(notrack{}, sites); len(got) != 2 || got[1].Name != "node1" {
		t.Errorf("notrack sites %+v", got)
	}
	if got := Sites(congestion{"bbr"}, sites); len(got) != 3 {
		t.Errorf("cc sites %+v", got)
	}
}

// The notrack table, as nft gets it (knftables' fake, no root): the pod
// ranges in a set, a counted notrack between them in prerouting and
// output at raw priority.
func TestNotrackRules(t *testing.T) {
	s := Site{Prefix: "cnb-x-", PodCIDRs: []netip.Prefix{netip.MustParsePrefix("198.19.0.0/24"), netip.MustParsePrefix("198.19.1.0/24")}}
	fake := knftables.NewFake(knftables.IPv4Family, notrackTable(s))
	tx := fake.NewTransaction()
	for _, o := range notrackRules(s) {
		tx.Add(o)
	}
	if err := fake.Run(context.Background(), tx); err != nil {
		t.Fatal(err)
	}
	dump := fake.Dump()
	for _, want := range []string{
		"add table ip cnb-x-notrack",
		"add chain ip cnb-x-notrack prerouting { type filter hook prerouting priority -300 ; }",
		"add chain ip cnb-x-notrack output { type filter hook output priority -300 ; }",
		"add element ip cnb-x-notrack pods { 198.19.0.0/24 }",
		"add element ip cnb-x-notrack pods { 198.19.1.0/24 }",
		`add rule ip cnb-x-notrack prerouting ip saddr @pods ip daddr @pods counter notrack comment "cnibench notrack"`,
		`add rule ip cnb-x-notrack output ip saddr @pods ip daddr @pods counter notrack comment "cnibench notrack"`,
	} {
		if !strings.Contains(dump, want) {
			t.Errorf("dump lacks %q:\n%s", want, dump)
		}
	}
}

// mtu-N gives the underlay and the nodes' uplinks N and every pod-side
// link N less the overlay's overhead; only it reaches the underlay.
func TestMTUWant(t *testing.T) {
	m := mtu{bytes: 9000}
	eth0 := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "eth0"}}
	vx := &netlink.Vxlan{LinkAttrs: netlink.LinkAttrs{Name: "cnb_vxlan"}}
	for _, c := range []struct {
		site Site
		link netlink.Link
		want int
	}{
		{Site{Underlay: true, Overhead: 50}, eth0, 9000},
		{Site{Node: true, Overhead: 50}, eth0, 9000},
		{Site{Node: true, Overhead: 50}, vx, 8950},
		{Site{Overhead: 50}, eth0, 8950},
		{Site{Node: true}, vx, 9000},
	} {
		if got := m.want(c.site, c.link); got != c.want {
			t.Errorf("%+v %s: %d, want %d", c.site, c.link.Attrs().Name, got, c.want)
		}
	}
	sites := []Site{{Name: "underlay", Underlay: true}, {Name: "node0", Node: true}, {Name: "node0-pod0"}}
	if got := Sites(m, sites); len(got) != 3 || got[0].Name != "underlay" {
		t.Errorf("mtu sites %+v", got)
	}
	for _, k := range []Knob{congestion{"bbr"}, notrack{}, offload{name: "gro-on"}} {
		for _, s := range Sites(k, sites) {
			if s.Underlay {
				t.Errorf("%s reaches the underlay", k.Name())
			}
		}
	}
}

func TestCPUMask(t *testing.T) {
	for _, c := range []struct {
		cpus []int
		want string
	}{{[]int{0}, "1"}, {[]int{1}, "2"}, {[]int{0, 1}, "3"}, {[]int{35}, "800000000"}} {
		if got := cpuMask(c.cpus); got != c.want {
			t.Errorf("cpuMask(%v) = %s, want %s", c.cpus, got, c.want)
		}
	}
	if !sameMask("00000002", "2") || !sameMask("0,00000008", "8") || sameMask("3", "2") {
		t.Error("sameMask")
	}
}
