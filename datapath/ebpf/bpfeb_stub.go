//go:build !(386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64 || wasm)

package ebpf

import (
	"fmt"
	"runtime"

	cebpf "github.com/cilium/ebpf"
)

// Only little-endian objects are generated (gen.go: -target bpfel); on a
// big-endian machine the datapaths report themselves unsupported.

func loadSock() (*cebpf.CollectionSpec, error) { return nil, bigEndian() }
func loadTc() (*cebpf.CollectionSpec, error)   { return nil, bigEndian() }

func bigEndian() error {
	return unsupported("little-endian BPF objects on "+runtime.GOARCH, fmt.Errorf("no bpfeb objects generated: %w", cebpf.ErrNotSupported))
}
