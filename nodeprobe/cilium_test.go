package nodeprobe

import (
	"net/netip"

	"github.com/cnibench/cnibench/datapath"

	"context"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/cnibench/cnibench/datapath/nftables"
	"github.com/cnibench/cnibench/internal/labtest"
)

// mountBPFFS mounts a private BPF filesystem on a temporary directory,
// unmounted at cleanup (before the directory is removed).
func mountBPFFS(t *testing.T) string {
	t.Helper()
	labtest.NeedRoot(t)
	dir := t.TempDir()
	if err := unix.Mount("bpf", dir, "bpf", 0, "mode=0700"); err != nil {
		t.Skipf("cannot mount a BPF filesystem here: %v", err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, 0); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// pinServiceMap creates Cilium's Service map with keySize-byte keys under
// bpffs/tc/globals, filled with frontends Services of slots backend slots
// each, as Cilium's lbmap writes them.
func pinServiceMap(t *testing.T, bpffs string, keySize uint32, frontends, slots int) {
	t.Helper()
	m, err := ebpf.NewMap(&ebpf.MapSpec{Name: ciliumServiceMap, Type: ebpf.Hash,
		KeySize: keySize, ValueSize: 12, MaxEntries: 4096})
	if errors.Is(err, ebpf.ErrNotSupported) {
		t.Skipf("no BPF hash maps here: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	dir := filepath.Join(bpffs, ciliumPinDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := m.Pin(filepath.Join(dir, ciliumServiceMap)); err != nil {
		t.Fatal(err)
	}
	backend := uint32(1)
	for f := range frontends {
		for slot := 0; slot <= slots; slot++ {
			key, val := make([]byte, keySize), make([]byte, 12)
			binary.BigEndian.PutUint32(key[0:], 0xc6128000+uint32(f)) // 198.18.128.0 + f
			binary.BigEndian.PutUint16(key[4:], 80)
			binary.NativeEndian.PutUint16(key[6:], uint16(slot))
			key[8] = unix.IPPROTO_TCP
			if slot == 0 {
				binary.NativeEndian.PutUint16(val[4:], uint16(slots)) // count
			} else {
				binary.NativeEndian.PutUint32(val[0:], backend) // backend_id
				backend++
			}
			binary.NativeEndian.PutUint16(val[6:], uint16(f+1)) // rev_nat_index
			if err := m.Put(key, val); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// Cilium: frontends and backend slots of the pinned Service map, and the
// memory of the cilium_ maps.
func TestReadCilium(t *testing.T) {
	ns := labtest.ScratchNS(t, "npc")
	bpffs := mountBPFFS(t)
	pinServiceMap(t, bpffs, lb4KeySize, 20, 4)
	rep := read(t, ns, bpffs)
	checkCounts(t, rep, Cilium, 20, 80)
	var frontends []datapath.Service
	for f := range 20 {
		frontends = append(frontends, datapath.Service{VIP: netip.AddrFrom4([4]byte{198, 18, 128, byte(f)}), Port: 80, Protocol: datapath.TCP})
	}
	checkKeys(t, rep, datapath.Spec{Services: frontends})
	if rep.BPFMapBytes == 0 {
		t.Errorf("BPF map bytes 0, want the memlock of %s", ciliumServiceMap)
	}
	var lb *MapInfo
	for i, m := range rep.Maps {
		if !strings.HasPrefix(m.Name, ciliumMapPrefix) {
			t.Errorf("map %q is not Cilium's", m.Name)
		}
		if m.Name == ciliumServiceMap {
			lb = &rep.Maps[i]
		}
	}
	if lb == nil || lb.Entries != 100 || lb.MaxEntries != 4096 || lb.Memlock == 0 || lb.Type != ebpf.Hash.String() {
		t.Fatalf("maps %+v: want %s with 100 entries of 4096 and its memlock", rep.Maps, ciliumServiceMap)
	}
	if len(rep.Errors) != 0 {
		t.Errorf("errors %q", rep.Errors)
	}
}

// A Service map whose key is not lb4_key (another Cilium version) is
// refused with a clear error, never misread.
func TestReadCiliumWrongKeySize(t *testing.T) {
	ns := labtest.ScratchNS(t, "npw")
	bpffs := mountBPFFS(t)
	pinServiceMap(t, bpffs, 16, 3, 2)
	_, err := Read(context.Background(), Options{NetNS: ns, BPFFS: bpffs})
	if err == nil || !strings.Contains(err.Error(), "16-byte keys") || !strings.Contains(err.Error(), "unknown Cilium version") {
		t.Fatalf("Read of a 16-byte-key map: %v, want an unknown-version error", err)
	}
	t.Log(err)
}

// Cilium beside a kube-proxy that was left running: Cilium is reported,
// the other datapath named in Errors.
func TestReadCiliumBesideKubeProxy(t *testing.T) {
	ns := labtest.ScratchNS(t, "npb")
	d, err := nftables.New(ns, nftables.Options{})
	d = labtest.OrSkip(t, d, err)
	program(t, d, scaleSpec(9, 2))
	bpffs := mountBPFFS(t)
	pinServiceMap(t, bpffs, lb4KeySize, 8, 2)
	rep := read(t, ns, bpffs)
	checkCounts(t, rep, Cilium, 8, 16)
	if text := strings.Join(rep.Errors, "\n"); !strings.Contains(text, "also found "+KubeProxyNFTables+" holding 10 Services, 20 endpoints") {
		t.Errorf("errors %q do not name the kube-proxy nftables layout", rep.Errors)
	}
}
