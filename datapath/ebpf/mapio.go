package ebpf

import (
	"context"
	"errors"
	"fmt"

	cebpf "github.com/cilium/ebpf"
)

// batchChunk is how many entries one batch syscall carries: large enough
// that syscall overhead vanishes, small enough to notice a cancelled ctx.
const batchChunk = 16384

// putAll writes keys[i] -> vals[i] with BPF_MAP_UPDATE_BATCH, or one entry
// at a time on kernels without batch operations (before 5.6).
func putAll[K, V any](ctx context.Context, m *cebpf.Map, keys []K, vals []V) error {
	for i := 0; i < len(keys); i += batchChunk {
		if err := ctx.Err(); err != nil {
			return err
		}
		j := min(i+batchChunk, len(keys))
		_, err := m.BatchUpdate(keys[i:j], vals[i:j], nil)
		if errors.Is(err, cebpf.ErrNotSupported) {
			for k := i; k < j; k++ {
				if err := m.Put(keys[k], vals[k]); err != nil {
					return fmt.Errorf("update %s: %w", mapName(m), err)
				}
			}
			continue
		}
		if err != nil {
			return fmt.Errorf("update %s (entries %d..%d of %d): %w", mapName(m), i, j-1, len(keys), err)
		}
	}
	return nil
}

// deleteAll removes keys; keys already absent are not an error.
func deleteAll[K any](ctx context.Context, m *cebpf.Map, keys []K) error {
	for i := 0; i < len(keys); i += batchChunk {
		if err := ctx.Err(); err != nil {
			return err
		}
		j := min(i+batchChunk, len(keys))
		_, err := m.BatchDelete(keys[i:j], nil)
		if err == nil {
			continue
		}
		// Unsupported, or a key was missing (the batch stops there): go
		// one by one.
		if !errors.Is(err, cebpf.ErrNotSupported) && !errors.Is(err, cebpf.ErrKeyNotExist) {
			return fmt.Errorf("delete from %s: %w", mapName(m), err)
		}
		for k := i; k < j; k++ {
			if err := m.Delete(keys[k]); err != nil && !errors.Is(err, cebpf.ErrKeyNotExist) {
				return fmt.Errorf("delete from %s: %w", mapName(m), err)
			}
		}
	}
	return nil
}

// dump reads every entry of m, with BPF_MAP_LOOKUP_BATCH when the kernel
// has it, else with the key iterator.
func dump[K comparable, V any](m *cebpf.Map, hint int) (map[K]V, error) {
	out := make(map[K]V, hint)
	keys := make([]K, batchChunk)
	vals := make([]V, batchChunk)
	var cursor cebpf.MapBatchCursor
	for {
		n, err := m.BatchLookup(&cursor, keys, vals, nil)
		for i := 0; i < n; i++ {
			out[keys[i]] = vals[i]
		}
		switch {
		case errors.Is(err, cebpf.ErrKeyNotExist):
			return out, nil
		case errors.Is(err, cebpf.ErrNotSupported):
			clear(out)
			var k K
			var v V
			it := m.Iterate()
			for it.Next(&k, &v) {
				out[k] = v
			}
			if err := it.Err(); err != nil {
				return nil, fmt.Errorf("read %s: %w", mapName(m), err)
			}
			return out, nil
		case err != nil:
			return nil, fmt.Errorf("read %s: %w", mapName(m), err)
		}
	}
}

// count returns the number of entries in m.
func count[K comparable, V any](m *cebpf.Map) (int, error) {
	d, err := dump[K, V](m, 0)
	return len(d), err
}

// mapName is m's kernel name, for messages.
func mapName(m *cebpf.Map) string {
	if info, err := m.Info(); err == nil && info.Name != "" {
		return info.Name
	}
	return m.String()
}
