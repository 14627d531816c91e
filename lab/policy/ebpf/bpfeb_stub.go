//go:build !(386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64 || wasm)

package ebpf

import (
	"fmt"
	"runtime"

	cebpf "github.com/cilium/ebpf"
)

// Only a little-endian object is generated (gen.go: -target bpfel); on a
// big-endian machine the enforcer reports itself unsupported.
func loadPolicy() (*cebpf.CollectionSpec, error) {
	return nil, unsupported("little-endian BPF objects on "+runtime.GOARCH, fmt.Errorf("no bpfeb object generated: %w", cebpf.ErrNotSupported))
}
