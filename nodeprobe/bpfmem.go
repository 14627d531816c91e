package nodeprobe

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/cilium/ebpf"
)

// mapEntry is a MapInfo with the kernel's map ID, to match a map opened
// by its pin with the same map found by ID.
type mapEntry struct {
	MapInfo
	id ebpf.MapID
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
