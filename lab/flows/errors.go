package flows

import (
	"fmt"

	cebpf "github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/features"

	"github.com/cnibench/cnibench/internal/kfeature"
)

// unsupported wraps err as a kfeature.Unsupported naming what the kernel
// lacks (errors.Is(err, errors.ErrUnsupported) holds).
func unsupported(what string, err error) error {
	return &kfeature.Unsupported{Feature: what, Detail: kfeature.Detail(err), Err: fmt.Errorf("flows: kernel lacks %s: %w", what, err)}
}

// probe asks the kernel for what the EBPF mechanism needs before loading
// anything: ring buffer maps (5.8) and the ring helpers in tc programs.
func probe() error {
	if err := features.HaveMapType(cebpf.RingBuf); err != nil {
		return kfeature.Check("BPF ring buffer maps", err, cebpf.ErrNotSupported)
	}
	for _, fn := range []asm.BuiltinFunc{asm.FnRingbufReserve, asm.FnRingbufSubmit, asm.FnRingbufQuery} {
		if err := features.HaveProgramHelper(cebpf.SchedCLS, fn); err != nil {
			return kfeature.Check(fmt.Sprintf("helper %s in tc programs", fn), err, cebpf.ErrNotSupported)
		}
	}
	return nil
}
