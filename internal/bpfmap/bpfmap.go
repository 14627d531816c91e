// Package bpfmap reads and writes whole BPF maps in batches, for the eBPF
// Service datapaths (datapath/ebpf) and the eBPF policy (lab/policy/ebpf).
package bpfmap

import (
	"context"
	"errors"
	"fmt"

	cebpf "github.com/cilium/ebpf"
)

// BatchChunk is how many entries one batch syscall carries: large enough
// that syscall overhead vanishes, small enough to notice a cancelled ctx.
const BatchChunk = 16384

// PutAll writes keys[i] -> vals[i] with BPF_MAP_UPDATE_BATCH, or one entry
// at a time on kernels without batch operations (before 5.6).
func PutAll[K, V any](ctx context.Context, m *cebpf.Map, keys []K, vals []V) error {
	for i := 0; i < len(keys); i += BatchChunk {
		if err := ctx.Err(); err != nil {
			return err
		}
		j := min(i+BatchChunk, len(keys))
		_, err := m.BatchUpdate(keys[i:j], vals[i:j], nil)
		if errors.Is(err, cebpf.ErrNotSupported) {
			for k := i; k < j; k++ {
				if err := m.Put(keys[k], vals[k]); err != nil {
					return fmt.Errorf("update %s: %w", Name(m), err)
				}
			}
			continue
		}
		if err != nil {
			return fmt.Errorf("update %s (entries %d..%d of %d): %w", Name(m), i, j-1, len(keys), err)
		}
	}
	return nil
}

// DeleteAll removes keys; keys already absent are not an error.
func DeleteAll[K any](ctx context.Context, m *cebpf.Map, keys []K) error {
	for i := 0; i < len(keys); i += BatchChunk {
		if err := ctx.Err(); err != nil {
			return err
		}
		j := min(i+BatchChunk, len(keys))
		_, err := m.BatchDelete(keys[i:j], nil)
		if err == nil {
			continue
		}
		// Unsupported, or a key was missing (the batch stops there): go
		// one by one.
		if !errors.Is(err, cebpf.ErrNotSupported) && !errors.Is(err, cebpf.ErrKeyNotExist) {
			return fmt.Errorf("delete from %s: %w", Name(m), err)
		}
		for k := i; k < j; k++ {
			if err := m.Delete(keys[k]); err != nil && !errors.Is(err, cebpf.ErrKeyNotExist) {
				return fmt.Errorf("delete from %s: %w", Name(m), err)
			}
		}
	}
	return nil
}

// Dump reads every entry of m, with BPF_MAP_LOOKUP_BATCH when the kernel
// has it, else with the key iterator.
func Dump[K comparable, V any](m *cebpf.Map, hint int) (map[K]V, error) {
	out := make(map[K]V, hint)
	keys := make([]K, BatchChunk)
	vals := make([]V, BatchChunk)
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
				return nil, fmt.Errorf("read %s: %w", Name(m), err)
			}
			return out, nil
		case err != nil:
			return nil, fmt.Errorf("read %s: %w", Name(m), err)
		}
	}
}

// Count returns the number of entries in m.
func Count[K comparable, V any](m *cebpf.Map) (int, error) {
	d, err := Dump[K, V](m, 0)
	return len(d), err
}

// Name is m's kernel name, for messages.
func Name(m *cebpf.Map) string {
	if info, err := m.Info(); err == nil && info.Name != "" {
		return info.Name
	}
	return m.String()
}
