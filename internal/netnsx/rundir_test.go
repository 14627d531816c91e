package netnsx

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"testing"

	"github.com/cnibench/cnibench/internal/mntnstest"
	"golang.org/x/sys/unix"
)

func TestParseMountinfoLine(t *testing.T) {
	m, err := parseMountinfoLine(`74 65 0:39 /netns /run/net\040ns rw,relatime shared:2 master:1 - tmpfs tmpfs rw,mode=755`)
	if err != nil || m.ID != 74 || m.Parent != 65 || m.Point != "/run/net ns" || !m.Shared || m.FSType != "tmpfs" {
		t.Errorf("parse = %+v, %v", m, err)
	}
	m, err = parseMountinfoLine(`66 65 0:4 net:[4026532178] /run/netns/a rw - nsfs nsfs rw`)
	if err != nil || m.Shared || m.FSType != "nsfs" || m.Point != "/run/netns/a" {
		t.Errorf("parse = %+v, %v", m, err)
	}
	for _, bad := range []string{"", "1 2 3 4 5 6", "x 2 0:1 / /a rw - ext4 /dev/x rw", "1 2 0:1 / /a rw ext4"} {
		if _, err := parseMountinfoLine(bad); err == nil {
			t.Errorf("parse(%q) accepted", bad)
		}
	}
}

func TestHiddenBases(t *testing.T) {
	mounts := []mount{
		{ID: 65, Parent: 44, Point: "/run", FSType: "tmpfs"},
		{ID: 66, Parent: 65, Point: "/run/netns/x", FSType: "nsfs"}, // hidden under 74
		{ID: 67, Parent: 66, Point: "/run/netns/x", FSType: "nsfs"}, // stacked on it, hidden too
		{ID: 74, Parent: 65, Point: "/run/netns", FSType: "tmpfs"},
		{ID: 75, Parent: 74, Point: "/run/netns/x", FSType: "nsfs"}, // the cover's copy
		{ID: 76, Parent: 74, Point: "/run/netns/y", FSType: "nsfs"},
	}
	if bases, n := hiddenBases(mounts, 74, "x"); len(bases) != 1 || bases[0] != 65 || n != 2 {
		t.Errorf("hiddenBases(x) = %v, %d; want [65], 2", bases, n)
	}
	if bases, n := hiddenBases(mounts, 74, "y"); len(bases) != 0 || n != 0 {
		t.Errorf("hiddenBases(y) = %v, %d; want none", bases, n)
	}
	uncovered := []mount{mounts[0], mounts[1], mounts[2]}
	if bases, n := hiddenBases(uncovered, 65, "x"); len(bases) != 0 || n != 0 {
		t.Errorf("hiddenBases(x) without the cover = %v, %d; want none", bases, n)
	}
}

// runDirMounts returns the mounts at RunDir on the private /run: one on
// /run's mount and any stacked on it (not the host's, which /run hides).
func runDirMounts(t *testing.T) []mount {
	t.Helper()
	all, err := readMountinfo()
	if err != nil {
		t.Fatal(err)
	}
	run, err := mountIDOf(unix.AT_FDCWD, "/run")
	if err != nil {
		t.Fatal(err)
	}
	var out []mount
	for parent := run; ; {
		found := false
		for _, m := range all {
			if m.Point == RunDir && m.Parent == parent {
				out = append(out, m)
				parent, found = m.ID, true
				break
			}
		}
		if !found {
			return out
		}
	}
}

// On a plain /run/netns the first CreateNamed makes it a shared bind of
// itself, once, as `ip netns add` does.
func TestCreateNamedSharesRunDir(t *testing.T) {
	if !mntnstest.Run(t) {
		return
	}
	if ms := runDirMounts(t); len(ms) != 0 {
		t.Fatalf("%s is already a mount in the private /run: %+v", RunDir, ms)
	}
	a, b := fmt.Sprintf("cnb-nx%06d-a", rand.IntN(1000000)), fmt.Sprintf("cnb-nx%06d-b", rand.IntN(1000000))
	for _, n := range []string{a, b} {
		if err := CreateNamed([]string{n}, func(string) {}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { DeleteNamed(n) })
	}
	if ms := runDirMounts(t); len(ms) != 1 || !ms[0].Shared {
		t.Errorf("mounts at %s after CreateNamed: %+v, want one shared", RunDir, ms)
	}
	for _, n := range []string{a, b} {
		if err := DeleteNamed(n); err != nil {
			t.Error(err)
		}
	}
}

// A name mounted twice (a neighbour bound it again) is unmounted fully.
func TestDeleteNamedStacked(t *testing.T) {
	if !mntnstest.Run(t) {
		return
	}
	ns := testNS(t)
	if out, err := exec.Command("mount", "--bind", Path(ns), Path(ns)).CombinedOutput(); err != nil {
		t.Fatalf("mount --bind: %v\n%s", err, out)
	}
	if err := DeleteNamed(ns); err != nil {
		t.Errorf("DeleteNamed: %v", err)
	}
	if _, err := os.Stat(Path(ns)); err == nil {
		t.Errorf("%s left", Path(ns))
	}
}
