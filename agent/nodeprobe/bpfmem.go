package nodeprobe

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/cilium/ebpf"
)

// readOnly opens a pinned map for reading only.
var readOnly = &ebpf.LoadPinOptions{ReadOnly: true}

// mapEntry is a MapInfo with the kernel's map ID, to match a map opened
// by its pin with the same map found by ID.
type mapEntry struct {
	MapInfo
	id ebpf.MapID
}

// ciliumMaps are the maps of this node's Cilium: those pinned under
// bpffs/tc/globals (and below) named cilium_*, with the inner maps of
// the map-in-maps among them (Maglev's, never pinned), each once by map
// ID, and the sum of their memlock. Two Cilium agents can share a kernel
// (a test cluster's nodes are namespaces of one host), each with its
// own BPF filesystem: a walk of every map on the host would count both.
// When the pin directory cannot be walked, it falls back to that walk
// and says so first among the errors.
func ciliumMaps(ctx context.Context, bpffs string) ([]mapEntry, uint64, []error) {
	dir := filepath.Join(bpffs, ciliumPinDir)
	out, total, errs, err := pinnedMaps(ctx, dir, ciliumMapPrefix)
	if err == nil {
		return out, total, errs
	}
	errs = []error{fmt.Errorf("BPF map memory: %s not walked (%v): counted every %s map on the host, other Cilium agents' on this kernel included", dir, err, ciliumMapPrefix)}
	out, total, err = mapsNamed(ctx, ciliumMapPrefix)
	if err != nil {
		errs = append(errs, err)
	}
	return out, total, errs
}

// pinnedMaps describes the maps pinned under dir whose name starts with
// prefix, and the inner maps of those that hold maps. err is set only
// when dir itself cannot be walked; errs name pins that could not be
// read (the others are still counted).
func pinnedMaps(ctx context.Context, dir, prefix string) (out []mapEntry, total uint64, errs []error, err error) {
	seen := map[ebpf.MapID]bool{}
	add := func(m *ebpf.Map) error {
		info, err := m.Info()
		if err != nil {
			return err
		}
		id, _ := info.ID()
		if seen[id] || !strings.HasPrefix(info.Name, prefix) {
			return nil
		}
		seen[id] = true
		mem, _ := info.Memlock()
		out = append(out, mapEntry{id: id, MapInfo: MapInfo{Name: info.Name, Type: info.Type.String(),
			MaxEntries: info.MaxEntries, Memlock: mem}})
		total += mem
		return nil
	}
	walkErr := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if path == dir {
				return err
			}
			errs = append(errs, fmt.Errorf("BPF map memory: %w", err))
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		m, err := ebpf.LoadPinnedMap(path, readOnly)
		if errors.Is(err, fs.ErrNotExist) || err != nil && strings.HasSuffix(err.Error(), "is not a Map") {
			return nil // unpinned since the listing, or a pinned program or link
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("BPF map memory: %s: %w", path, err))
			return nil
		}
		defer m.Close()
		if err := add(m); err != nil {
			errs = append(errs, fmt.Errorf("BPF map memory: %s: %w", path, err))
			return nil
		}
		if t := m.Type(); t == ebpf.HashOfMaps || t == ebpf.ArrayOfMaps {
			if err := addInner(m, add); err != nil {
				errs = append(errs, fmt.Errorf("BPF map memory: inner maps of %s: %w", path, err))
			}
		}
		return nil
	})
	if walkErr != nil {
		if ctx.Err() != nil {
			return out, total, append(errs, walkErr), nil
		}
		return nil, 0, nil, walkErr
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Memlock > out[j].Memlock })
	return out, total, errs, nil
}

// addInner adds the maps a map-in-map holds: from user space its values
// are the inner maps' IDs.
func addInner(outer *ebpf.Map, add func(*ebpf.Map) error) error {
	key := make([]byte, outer.KeySize())
	var id uint32
	it := outer.Iterate()
	for it.Next(&key, &id) {
		m, err := ebpf.NewMapFromID(ebpf.MapID(id))
		if errors.Is(err, os.ErrNotExist) {
			continue // replaced since
		}
		if err != nil {
			return err
		}
		err = add(m)
		m.Close()
		if err != nil {
			return err
		}
	}
	return it.Err()
}

// mapsNamed walks every BPF map on the host (BPF maps belong to no network
// namespace) and returns those whose name starts with prefix, with the
// sum of their memlock: the memory the kernel charges for them, read from
// the map's fdinfo. The kernel keeps 15 characters of a map's name, so
// names are truncated (cilium_lb4_serv...). Maps that disappear during
// the walk are skipped; one that cannot be opened is named in the error
// returned with the others.
func mapsNamed(ctx context.Context, prefix string) ([]mapEntry, uint64, error) {
	var (
		out      []mapEntry
		total    uint64
		id       ebpf.MapID
		firstErr error
	)
	for {
		if err := ctx.Err(); err != nil {
			return out, total, err
		}
		next, err := ebpf.MapGetNextID(id)
		if errors.Is(err, os.ErrNotExist) {
			break
		}
		if err != nil {
			return out, total, fmt.Errorf("BPF map memory: listing map IDs after %d: %w", id, err)
		}
		id = next
		e, ok, err := mapByID(id, prefix)
		if err != nil && firstErr == nil {
			// One map we cannot open (another program's) must not hide
			// the others: go on, report the first failure.
			firstErr = fmt.Errorf("BPF map memory: map %d: %w", id, err)
		}
		if ok {
			out = append(out, e)
			total += e.Memlock
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Memlock > out[j].Memlock })
	return out, total, firstErr
}

// mapByID describes map id if its name starts with prefix.
func mapByID(id ebpf.MapID, prefix string) (mapEntry, bool, error) {
	m, err := ebpf.NewMapFromID(id)
	if errors.Is(err, os.ErrNotExist) {
		return mapEntry{}, false, nil // freed since MapGetNextID
	}
	if err != nil {
		return mapEntry{}, false, err
	}
	defer m.Close()
	info, err := m.Info()
	if err != nil {
		return mapEntry{}, false, err
	}
	if !strings.HasPrefix(info.Name, prefix) {
		return mapEntry{}, false, nil
	}
	mem, _ := info.Memlock()
	return mapEntry{id: id, MapInfo: MapInfo{Name: info.Name, Type: info.Type.String(),
		MaxEntries: info.MaxEntries, Memlock: mem}}, true, nil
}
