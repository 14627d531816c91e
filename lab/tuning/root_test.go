package tuning

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/internal/netnsx"
	"github.com/cnibench/cnibench/internal/nsexec"
	"github.com/cnibench/cnibench/lab"
	"github.com/cnibench/cnibench/lab/labtest"
)

// labSites are a real lab's namespaces as sites.
func labSites(t *testing.T) []Site { return LabSites(labtest.NewLab(t, "tu")) }

// state is what the tunings touch in one namespace: the congestion
// control, every interface's offload features and MTU, the nft ruleset.
func state(t *testing.T, s Site) string {
	t.Helper()
	var b strings.Builder
	err := netnsx.Do(s.Netns, func() error {
		v, err := netnsx.ReadSysctl(ccKey)
		b.WriteString(ccKey + "=" + v + "\n")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	devs, err := links(s)
	if err != nil {
		t.Fatal(err)
	}
	e, err := ethtoolIn(s)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	for _, dev := range devs {
		f, err := e.Features(dev)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range append(groFeatures, gsoFeatures...) {
			b.WriteString(dev + " " + k + "=" + map[bool]string{true: "on", false: "off"}[f[k]] + "\n")
		}
	}
	h, err := netnsx.NewHandle(s.Netns)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	ls, err := mtuLinks(h)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range ls {
		fmt.Fprintf(&b, "%s mtu=%d\n", l.Attrs().Name, l.Attrs().MTU)
	}
	out, err := nsexec.Run(context.Background(), s.Netns, nil, "nft", "list", "ruleset")
	if err != nil {
		t.Fatalf("nft list ruleset in %s: %v", s.Name, err)
	}
	b.Write(out)
	return b.String()
}

// Each tuning applies in a real lab, reads back as asked in every
// namespace it concerns, and its undo leaves every namespace as it was.
func TestTuningsApplyAndUndo(t *testing.T) {
	labtest.NeedRoot(t)
	sites := labSites(t)
	before := map[string]string{}
	for _, s := range sites {
		before[s.Name] = state(t, s)
	}
	ctx := context.Background()
	for _, name := range []string{"cc-bbr", "cc-reno", "gro-on", "gro-off", "gso-off", "gso-on", "notrack", "mtu-9000"} {
		t.Run(name, func(t *testing.T) {
			k, _ := Lookup(name)
			if err := k.Applicable(); errors.Is(err, ErrNotApplicable) {
				c, undo := Run(ctx, k, sites)
				if c.Status != NotApplicable || undo() != nil {
					t.Errorf("%+v", c)
				}
				t.Skipf("%s on this host: %v", name, err)
			}
			c, undo := Run(ctx, k, sites)
			want := len(Sites(k, sites))
			if c.Status != Applied || c.Sites != want || !strings.HasPrefix(c.Detail, "read back: ") {
				t.Errorf("%+v, want applied in %d namespaces", c, want)
			}
			changed := 0
			for _, s := range Sites(k, sites) {
				if state(t, s) != before[s.Name] {
					changed++
				}
				if _, err := k.Verify(ctx, s); err != nil {
					t.Errorf("%s: %v", s.Name, err)
				}
			}
			if err := undo(); err != nil {
				t.Fatal(err)
			}
			for _, s := range sites {
				if got := state(t, s); got != before[s.Name] {
					t.Errorf("%s after undo:\n%s\nwant\n%s", s.Name, got, before[s.Name])
				}
			}
			// A tuning that changes nothing it reads back could not fail:
			// those that differ from a new lab's state (veths: GRO off, GSO
			// on) must change every namespace they concern; the rest may
			// find it held already (the host's bbr).
			t.Logf("%s: %s; changed %d of %d namespaces", name, c.Detail, changed, want)
			if (name == "notrack" || name == "gro-on" || name == "gso-off" || name == "mtu-9000") && changed != want {
				t.Errorf("%s changed %d of %d namespaces", name, changed, want)
			}
		})
	}
}

// On a VXLAN lab, where the VXLAN device may not be larger than eth0
// under it less 50, an MTU lowered or raised is applied and undone in an
// order the kernel accepts, and every link gets its MTU back.
func TestMTUUpAndDownOnVXLAN(t *testing.T) {
	labtest.NeedRoot(t)
	cfg := lab.Config{Name: fmt.Sprintf("tv%06d", rand.IntN(1000000)), Nodes: 2, PodsPerNode: 1, Routing: lab.RoutingVXLAN, StateDir: t.TempDir()}
	t.Cleanup(func() {
		if _, err := lab.Down(cfg.StateDir, cfg.Name); err != nil {
			t.Errorf("lab down: %v", err)
		}
	})
	l, err := lab.Up(context.Background(), cfg)
	labtest.SkipIfUnsupported(t, err)
	if err != nil {
		t.Fatal(err)
	}
	sites := LabSites(l)
	before := map[string]string{}
	for _, s := range sites {
		before[s.Name] = state(t, s)
	}
	for _, name := range []string{"mtu-1400", "mtu-9000"} {
		k, _ := Lookup(name)
		c, undo := Run(context.Background(), k, sites)
		if c.Status != Applied {
			t.Errorf("%s: %+v", name, c)
		}
		if err := undo(); err != nil {
			t.Errorf("%s undo: %v", name, err)
		}
		for _, s := range sites {
			if got := state(t, s); got != before[s.Name] {
				t.Errorf("%s: %s after undo:\n%s\nwant\n%s", name, s.Name, got, before[s.Name])
			}
		}
	}
}

// node-rps steers each node's uplink to the node's CPUs, reads it back,
// and its undo puts the masks back; a run that pins nothing (one CPU)
// changes nothing and says so.
func TestNodeRPS(t *testing.T) {
	labtest.NeedRoot(t)
	sites := labSites(t)
	ctx := context.Background()
	k, _ := Lookup("node-rps")
	masks := func() map[string]string {
		out := map[string]string{}
		for _, s := range Sites(k, sites) {
			files, err := rpsFiles(ctx, s)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range files {
				v, err := readInNetns(ctx, s, f)
				if err != nil {
					t.Fatal(err)
				}
				out[s.Name+" "+f] = v
			}
		}
		return out
	}
	before := masks()
	if c, undo := Run(ctx, k, sites); c.Status != Applied || !strings.Contains(c.Detail, "one CPU") || undo() != nil {
		t.Errorf("unpinned: %+v, want applied as nothing pinned", c)
	}
	if after := masks(); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("unpinned: masks %v, want unchanged %v", after, before)
	}
	nodes := 0
	for i := range sites {
		if sites[i].Node {
			sites[i].CPUs = []int{nodes % 2} // as runs pin: node0 one CPU, the others another
			nodes++
		}
	}
	c, undo := Run(ctx, k, sites)
	if c.Status != Applied || c.Sites != len(Sites(k, sites)) {
		t.Errorf("%+v, want applied on every node", c)
	}
	for _, s := range Sites(k, sites) {
		files, _ := rpsFiles(ctx, s)
		for _, f := range files {
			if v, _ := readInNetns(ctx, s, f); !sameMask(v, cpuMask(s.CPUs)) || sameMask(v, "0") {
				t.Errorf("%s %s: %s, want %s", s.Name, f, v, cpuMask(s.CPUs))
			}
		}
	}
	t.Logf("%s", c.Detail)
	if err := undo(); err != nil {
		t.Fatal(err)
	}
	if after := masks(); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("after undo %v, want %v", after, before)
	}
}
