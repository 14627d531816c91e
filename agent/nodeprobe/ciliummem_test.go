package nodeprobe

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cilium/ebpf"

	"github.com/cnibench/cnibench/lab/labtest"
)

// newMap creates a map, skipping the test where BPF maps cannot be made;
// pinned under bpffs/tc/globals by its name unless bpffs is "".
func newMap(t *testing.T, bpffs string, spec *ebpf.MapSpec) *ebpf.Map {
	t.Helper()
	m, err := ebpf.NewMap(spec)
	if errors.Is(err, ebpf.ErrNotSupported) {
		t.Skipf("no BPF %s maps here: %v", spec.Type, err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	if bpffs != "" {
		dir := filepath.Join(bpffs, ciliumPinDir)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := m.Pin(filepath.Join(dir, spec.Name)); err != nil {
			t.Fatal(err)
		}
	}
	return m
}

// mapID is m's kernel ID.
func mapID(t *testing.T, m *ebpf.Map) ebpf.MapID {
	t.Helper()
	info, err := m.Info()
	if err != nil {
		t.Fatal(err)
	}
	id, _ := info.ID()
	return id
}

// The memory of this node's Cilium maps only: those pinned in its BPF
// filesystem (tc/globals and below) and the inner maps they hold, not an
// unpinned cilium_ map, not another tool's pinned map, not the maps of a
// second Cilium agent on the same kernel (its own BPF filesystem).
func TestCiliumMapsPinnedOnly(t *testing.T) {
	bpffs := mountBPFFS(t)
	svc := newMap(t, bpffs, &ebpf.MapSpec{Name: ciliumServiceMap, Type: ebpf.Hash, KeySize: 12, ValueSize: 12, MaxEntries: 4096})
	inner := &ebpf.MapSpec{Name: "cilium_maglev_inner", Type: ebpf.Array, KeySize: 4, ValueSize: 4 * 251, MaxEntries: 1}
	maglev := newMap(t, bpffs, &ebpf.MapSpec{Name: "cilium_lb4_maglev", Type: ebpf.HashOfMaps, KeySize: 2, ValueSize: 4, MaxEntries: 16, InnerMap: inner})
	lut := newMap(t, "", inner)
	if err := maglev.Put(uint16(1), lut); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(bpffs, ciliumPinDir, "sub")
	if err := os.Mkdir(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	deep := newMap(t, "", &ebpf.MapSpec{Name: "cilium_deep", Type: ebpf.Hash, KeySize: 4, ValueSize: 4, MaxEntries: 64})
	if err := deep.Pin(filepath.Join(sub, "cilium_deep")); err != nil {
		t.Fatal(err)
	}
	newMap(t, "", &ebpf.MapSpec{Name: "cilium_x", Type: ebpf.Hash, KeySize: 4, ValueSize: 4, MaxEntries: 64})
	newMap(t, bpffs, &ebpf.MapSpec{Name: "tc_other", Type: ebpf.Hash, KeySize: 4, ValueSize: 4, MaxEntries: 64})
	newMap(t, mountBPFFS(t), &ebpf.MapSpec{Name: ciliumServiceMap, Type: ebpf.Hash, KeySize: 12, ValueSize: 12, MaxEntries: 4096}) // the other node's

	maps, total, errs := ciliumMaps(context.Background(), bpffs)
	if len(errs) != 0 {
		t.Errorf("errors %v", errs)
	}
	var want uint64
	ids := map[ebpf.MapID]bool{}
	for _, m := range []*ebpf.Map{svc, maglev, lut, deep} {
		ids[mapID(t, m)] = true
		info, _ := m.Info()
		mem, _ := info.Memlock()
		want += mem
	}
	for _, m := range maps {
		if !ids[m.id] {
			t.Errorf("map %d %q counted: not one of this node's Cilium maps", m.id, m.Name)
		}
		delete(ids, m.id)
	}
	if len(ids) != 0 || total != want {
		t.Errorf("%d maps, %d bytes; want the 4 pinned here (the inner one included), %d bytes", len(maps), total, want)
	}
}

// Where the pin directory cannot be walked the memory is every cilium_
// map of the host, said in Errors.
func TestCiliumMapsFallback(t *testing.T) {
	labtest.NeedRoot(t)
	m := newMap(t, "", &ebpf.MapSpec{Name: "cilium_x", Type: ebpf.Hash, KeySize: 4, ValueSize: 4, MaxEntries: 64})
	maps, total, errs := ciliumMaps(context.Background(), filepath.Join(t.TempDir(), "none"))
	if len(errs) == 0 || !strings.Contains(errs[0].Error(), "not walked") || !strings.Contains(errs[0].Error(), "other Cilium agents") {
		t.Fatalf("errors %v: want the fallback said first", errs)
	}
	id := mapID(t, m)
	if !slices.ContainsFunc(maps, func(e mapEntry) bool { return e.id == id }) || total == 0 {
		t.Errorf("fallback: %d maps, %d bytes, without the unpinned cilium_x", len(maps), total)
	}
}
