//go:build !(386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64 || wasm)

package flows

import (
	"fmt"
	"runtime"

	cebpf "github.com/cilium/ebpf"
)

// Only a little-endian object is generated (gen.go: -target bpfel); on a
// big-endian machine the EBPF mechanism reports itself unsupported.

func loadFlows() (*cebpf.CollectionSpec, error) {
	return nil, unsupported("little-endian BPF objects on "+runtime.GOARCH, fmt.Errorf("no bpfeb objects generated: %w", cebpf.ErrNotSupported))
}

// The generated names ebpf.go uses, so the package builds; loadFlows
// fails before any is used.
const (
	flowsMapCnbFlowEvents    = "cnb_flow_events"
	flowsProgCnbFlowsFromPod = "cnb_flows_from_pod"
	flowsProgCnbFlowsToPod   = "cnb_flows_to_pod"
)

type flowsObjects struct {
	CnbFlowsFromPod, CnbFlowsToPod         *cebpf.Program
	CnbFlowEvents, CnbFlowLost, CnbFlowUdp *cebpf.Map
}

func (o *flowsObjects) Close() error { return nil }
