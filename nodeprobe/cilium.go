package nodeprobe

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/cilium/ebpf"
)

// Cilium's IPv4 Service map (bpf/lib/lb.h, pkg/maps/lbmap), pinned by
// name in the tc globals directory of the BPF filesystem.
const (
	ciliumMapPrefix  = "cilium_"
	ciliumServiceMap = "cilium_lb4_services_v2"
	ciliumPinDir     = "tc/globals"
)

// lb4_key (bpf/lib/common.h): __be32 address, __be16 dport,
// __u16 backend_slot (host order; 0 is the Service frontend, 1..count its
// backend slots), __u8 proto, __u8 scope, __u8 pad[2]. Only the key is
// decoded; the value (lb4_service) is not needed to count.
const (
	lb4KeySize     = 12
	lb4SlotOffset  = 6
	ctxCheckPeriod = 4096 // entries between two looks at the context
)

// readCilium counts Cilium's Service map: a key whose backend_slot is 0
// is a frontend (a ClusterIP:port, and each NodePort, external or
// load-balancer address of a Service port: Cilium has one frontend per
// address), any other key one backend slot of a frontend. A map whose key
// is not lb4_key's 12 bytes is refused, never misread.
func readCilium(ctx context.Context, bpffs string) (*reading, error) {
	path := filepath.Join(bpffs, ciliumPinDir, ciliumServiceMap)
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil, absentError("pinned BPF map " + path + " (Cilium)")
	} else if err != nil {
		return nil, fmt.Errorf("cilium: %w", err)
	}
	m, err := ebpf.LoadPinnedMap(path, readOnly)
	if err != nil {
		return nil, fmt.Errorf("cilium: opening %s: %w", path, err)
	}
	defer m.Close()
	if m.Type() != ebpf.Hash || m.KeySize() != lb4KeySize {
		return nil, fmt.Errorf("cilium: %s is a %s map with %d-byte keys, want a Hash map of %d-byte lb4_key: unknown Cilium version, not read",
			path, m.Type(), m.KeySize(), lb4KeySize)
	}
	r := &reading{datapath: Cilium}
	var key [lb4KeySize]byte
	var val []byte
	it := m.Iterate()
	n := 0
	for it.Next(&key, &val) {
		if binary.NativeEndian.Uint16(key[lb4SlotOffset:]) == 0 {
			r.services++
			r.keys = append(r.keys, ciliumFrontendKey(key[:]))
		} else {
			r.endpoints++
		}
		if n++; n%ctxCheckPeriod == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("cilium: iterating %s: %w", path, err)
	}
	r.lbMap = &mapEntry{MapInfo: MapInfo{Name: ciliumServiceMap, Type: m.Type().String(),
		MaxEntries: m.MaxEntries(), Entries: n}}
	if info, err := m.Info(); err == nil {
		r.lbMap.id, _ = info.ID()
		r.lbMap.Memlock, _ = info.Memlock()
	}
	return r, nil
}
