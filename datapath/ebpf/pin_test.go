package ebpf

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	cebpf "github.com/cilium/ebpf"

	"github.com/cnibench/cnibench/internal/netnsx"
)

// pinDir returns a fresh directory for pins; RemovePinned runs at cleanup
// whatever the test did.
func pinDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "cnb-c2-bpf")
	t.Cleanup(func() {
		if err := RemovePinned(dir); err != nil {
			t.Errorf("RemovePinned: %v", err)
		}
	})
	return dir
}

// assertNoPinDir checks Close removed the pins and the bpffs mount.
func assertNoPinDir(t *testing.T, dir string) {
	t.Helper()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		ents, _ := os.ReadDir(dir)
		t.Errorf("pin dir %s still there after Close (%v, %d entries)", dir, err, len(ents))
	}
}

// TestSocketLBPinned: with PinDir, Release leaves the datapath attached and
// its maps programmed; a new SocketLB takes it over (its own programs on
// the pinned maps and links), and its Close removes everything.
func TestSocketLBPinned(t *testing.T) {
	cg := testCgroup(t)
	dir := pinDir(t)
	ctx := context.Background()
	s1, err := NewSocketLB(cg, Options{PinDir: dir})
	skipUnsupported(t, err)
	if err != nil {
		t.Fatal(err)
	}
	program(t, s1, dummySpec(100, 4))
	if err := s1.Release(); err != nil {
		t.Fatal(err)
	}
	for _, h := range sockHooks {
		if got := cgroupProgs(t, cg, h.attach); len(got) != 1 {
			t.Fatalf("%s: %d programs attached after Release, want 1", h.attach, len(got))
		}
	}

	s2, err := NewSocketLB(cg, Options{PinDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if n, err := s2.Verify(ctx); err == nil || n.MapEntries != 500 || !strings.Contains(err.Error(), "took over the pinned maps") {
		t.Errorf("Verify before the first Program after taking over: %+v %v; want the 500 entries counted and an error", n, err)
	}
	spec := dummySpec(150, 4)
	spec.Services = spec.Services[50:] // 50 of the old Services gone, 50 new
	program(t, s2, spec)
	for _, h := range sockHooks {
		got := cgroupProgs(t, cg, h.attach)
		if want := progID(t, s2.objs.coll.Programs[h.prog]); len(got) != 1 || got[0] != want {
			t.Errorf("%s: attached %v, want the new process's program %d", h.attach, got, want)
		}
	}
	progs, maps := ids(t, s2.objs)
	if err := s2.Close(); err != nil {
		t.Fatal(err)
	}
	for _, h := range sockHooks {
		if got := cgroupProgs(t, cg, h.attach); len(got) != 0 {
			t.Errorf("%s: %v attached after Close", h.attach, got)
		}
	}
	assertFreed(t, progs, maps)
	assertNoPinDir(t, dir)
}

// TestTCLBPinned: the same for ebpf-tc, with pinned tcx links and with
// netlink filters (which need no pin to stay).
func TestTCLBPinned(t *testing.T) {
	l := newTestLab(t)
	node := l.Nodes[0]
	nsPath := netnsx.Path(node.Netns)
	h, err := netnsx.NewHandle(nsPath)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	for _, how := range []string{AttachTCX, AttachNetlink} {
		t.Run(how, func(t *testing.T) {
			dir := pinDir(t)
			d1, err := NewTCLB(nsPath, nil, Options{TCAttach: how, PinDir: dir})
			skipUnsupported(t, err)
			if err != nil {
				t.Fatal(err)
			}
			program(t, d1, dummySpec(100, 4))
			if err := d1.Release(); err != nil {
				t.Fatal(err)
			}
			if hooks, _ := tcHooks(t, h, nsPath); hooks != 2*len(node.Pods) {
				t.Fatalf("%d hooks after Release, want %d", hooks, 2*len(node.Pods))
			}
			d2, err := NewTCLB(nsPath, nil, Options{PinDir: dir}) // attach mode: whatever is there
			if err != nil {
				t.Fatal(err)
			}
			defer d2.Close()
			if d2.AttachMode() != how {
				t.Errorf("took over a %s datapath as %s", how, d2.AttachMode())
			}
			program(t, d2, dummySpec(120, 4))
			progs, maps := ids(t, d2.objs)
			current := map[cebpf.ProgramID]bool{}
			for _, id := range progs {
				current[id] = true
			}
			got := tcProgIDs(t, h, nsPath)
			for _, id := range got {
				if !current[id] {
					t.Errorf("a hook runs program %d, not one of the new process's %v", id, progs)
				}
			}
			if hooks, _ := tcHooks(t, h, nsPath); hooks != 2*len(node.Pods) || len(got) != hooks {
				t.Errorf("%d hooks (%d programs) after taking over, want %d", hooks, len(got), 2*len(node.Pods))
			}
			if err := d2.Close(); err != nil {
				t.Fatal(err)
			}
			if hooks, qdiscs := tcHooks(t, h, nsPath); hooks != 0 || qdiscs != 0 {
				t.Errorf("after Close: %d hooks, %d clsact qdiscs left", hooks, qdiscs)
			}
			assertFreed(t, progs, maps)
			assertNoPinDir(t, dir)
		})
	}
}

// TestRemovePinned: after a Release (as if the process had died),
// RemovePinned alone detaches the datapath and frees its maps.
func TestRemovePinned(t *testing.T) {
	cg := testCgroup(t)
	dir := pinDir(t)
	s, err := NewSocketLB(cg, Options{PinDir: dir})
	skipUnsupported(t, err)
	if err != nil {
		t.Fatal(err)
	}
	program(t, s, dummySpec(10, 2))
	progs, maps := ids(t, s.objs)
	if err := s.Release(); err != nil {
		t.Fatal(err)
	}
	if err := RemovePinned(dir); err != nil {
		t.Fatal(err)
	}
	// Dropping the last reference to a link through its pin releases it
	// from a kernel work queue: allow it a moment.
	deadline := time.Now().Add(2 * time.Second)
	for _, h := range sockHooks {
		for {
			got := cgroupProgs(t, cg, h.attach)
			if len(got) == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("%s: %v attached after RemovePinned", h.attach, got)
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	assertFreed(t, progs, maps)
	assertNoPinDir(t, dir)
	if err := RemovePinned(dir); err != nil {
		t.Errorf("second RemovePinned: %v", err)
	}
}
