package ebpf

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	cebpf "github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/vishvananda/netlink"

	"github.com/cnibench/cnibench/internal/netnsx"
)

// ids returns the kernel IDs of every program and map of objs.
func ids(t *testing.T, objs *objects) (progs []cebpf.ProgramID, maps []cebpf.MapID) {
	t.Helper()
	for _, p := range objs.coll.Programs {
		progs = append(progs, progID(t, p))
	}
	for _, m := range objs.coll.Maps {
		info, err := m.Info()
		if err != nil {
			t.Fatal(err)
		}
		id, ok := info.ID()
		if !ok {
			t.Skip("skipping: kernel does not report map IDs")
		}
		maps = append(maps, id)
	}
	return progs, maps
}

// assertFreed checks the kernel no longer has any of the programs and maps
// (nothing pinned, no attachment or fd keeps them). The kernel frees them
// when the last reference goes, which Close's syscalls do; the short
// deadline only covers deferred frees.
func assertFreed(t *testing.T, progs []cebpf.ProgramID, maps []cebpf.MapID) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for _, id := range progs {
		for {
			p, err := cebpf.NewProgramFromID(id)
			if errors.Is(err, os.ErrNotExist) {
				break
			}
			if err == nil {
				p.Close()
			}
			if time.Now().After(deadline) {
				t.Errorf("program %d still exists after Close (%v)", id, err)
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	for _, id := range maps {
		for {
			m, err := cebpf.NewMapFromID(id)
			if errors.Is(err, os.ErrNotExist) {
				break
			}
			if err == nil {
				m.Close()
			}
			if time.Now().After(deadline) {
				t.Errorf("map %d still exists after Close (%v)", id, err)
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// TestSocketLBCloseLeavesNothing: Close detaches all four cgroup hooks and
// frees every program and map; Close is idempotent and later calls fail.
func TestSocketLBCloseLeavesNothing(t *testing.T) {
	s := newSocketLB(t, Options{})
	program(t, s, dummySpec(100, 4))
	progs, maps := ids(t, s.objs)
	for _, h := range sockHooks {
		if got := cgroupProgs(t, s.Cgroup(), h.attach); len(got) != 1 {
			t.Fatalf("%s: %d programs attached before Close, want 1", h.attach, len(got))
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for _, h := range sockHooks {
		if got := cgroupProgs(t, s.Cgroup(), h.attach); len(got) != 0 {
			t.Errorf("%s: programs %v still attached after Close", h.attach, got)
		}
	}
	assertFreed(t, progs, maps)
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := s.Verify(t.Context()); !errors.Is(err, errClosed) {
		t.Errorf("Verify after Close: %v, want %v", err, errClosed)
	}
}

// TestTCLBCloseLeavesNothing: Close removes the tcx links, or the cls_bpf
// filters and the clsact qdiscs it added, from every pod veth, and frees
// every program and map.
func TestTCLBCloseLeavesNothing(t *testing.T) {
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
			// Maps too small for the spec: AutoSize reloads the programs
			// and switches every hook to them.
			d, err := NewTCLB(nsPath, nil, Options{TCAttach: how, LBMapMax: 64, AutoSize: true})
			skipUnsupported(t, err)
			if err != nil {
				t.Fatal(err)
			}
			first, _ := ids(t, d.objs)
			program(t, d, dummySpec(100, 4))
			progs, maps := ids(t, d.objs)
			current := map[cebpf.ProgramID]bool{}
			for _, id := range progs {
				current[id] = true
			}
			if d.Capacity().BackendMap != 512 || current[first[0]] || current[first[1]] {
				t.Fatalf("capacity %+v, programs %v (were %v): want grown maps and new programs", d.Capacity(), progs, first)
			}
			for _, id := range tcProgIDs(t, h, nsPath) {
				if !current[id] {
					t.Errorf("a hook runs program %d, not one of the current %v", id, progs)
				}
			}
			hooks, qdiscs := tcHooks(t, h, nsPath)
			wantQ := 0
			if how == AttachNetlink {
				wantQ = len(node.Pods)
			}
			if hooks != 2*len(node.Pods) || qdiscs != wantQ {
				t.Fatalf("before Close: %d hooks in use, %d clsact qdiscs; want %d, %d", hooks, qdiscs, 2*len(node.Pods), wantQ)
			}
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
			if hooks, qdiscs := tcHooks(t, h, nsPath); hooks != 0 || qdiscs != 0 {
				t.Errorf("after Close: %d tc programs or filters and %d clsact qdiscs left", hooks, qdiscs)
			}
			assertFreed(t, progs, maps)
		})
	}
}

// tcHooks counts, over every cnbp* link in the namespace, the tcx programs
// and tc filters on ingress and egress (hooks), and the clsact qdiscs.
func tcHooks(t *testing.T, h *netlink.Handle, nsPath string) (hooks, qdiscs int) {
	t.Helper()
	links, err := h.LinkList()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range links {
		if !strings.HasPrefix(l.Attrs().Name, PodVethPrefix) {
			continue
		}
		idx := l.Attrs().Index
		for _, at := range []cebpf.AttachType{cebpf.AttachTCXIngress, cebpf.AttachTCXEgress} {
			err := netnsx.Do(nsPath, func() error {
				res, err := link.QueryPrograms(link.QueryOptions{Target: idx, Attach: at})
				if err == nil {
					hooks += len(res.Programs)
				}
				return err
			})
			if err != nil && !errors.Is(err, cebpf.ErrNotSupported) {
				t.Fatalf("query tcx on %s: %v", l.Attrs().Name, err)
			}
		}
		for _, parent := range []uint32{netlink.HANDLE_MIN_INGRESS, netlink.HANDLE_MIN_EGRESS} {
			fs, err := h.FilterList(l, parent)
			if err != nil {
				t.Fatal(err)
			}
			hooks += len(fs)
		}
		qs, err := h.QdiscList(l)
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range qs {
			if q.Type() == "clsact" {
				qdiscs++
			}
		}
	}
	return hooks, qdiscs
}

// tcProgIDs lists the programs on every cnbp* link's tc hooks.
func tcProgIDs(t *testing.T, h *netlink.Handle, nsPath string) []cebpf.ProgramID {
	t.Helper()
	links, err := h.LinkList()
	if err != nil {
		t.Fatal(err)
	}
	var out []cebpf.ProgramID
	for _, l := range links {
		if !strings.HasPrefix(l.Attrs().Name, PodVethPrefix) {
			continue
		}
		for _, at := range []cebpf.AttachType{cebpf.AttachTCXIngress, cebpf.AttachTCXEgress} {
			netnsx.Do(nsPath, func() error {
				res, err := link.QueryPrograms(link.QueryOptions{Target: l.Attrs().Index, Attach: at})
				if err == nil {
					for _, p := range res.Programs {
						out = append(out, p.ID)
					}
				}
				return nil
			})
		}
		for _, parent := range []uint32{netlink.HANDLE_MIN_INGRESS, netlink.HANDLE_MIN_EGRESS} {
			fs, err := h.FilterList(l, parent)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range fs {
				if bf, ok := f.(*netlink.BpfFilter); ok {
					out = append(out, cebpf.ProgramID(bf.Id))
				}
			}
		}
	}
	return out
}
