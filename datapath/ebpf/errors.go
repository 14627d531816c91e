package ebpf

import (
	"errors"
	"fmt"

	cebpf "github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/features"
	"golang.org/x/sys/unix"

	"github.com/cnibench/cnibench/internal/kfeature"
)

// ErrUnsupported is wrapped by every error caused by a kernel that lacks a
// feature these datapaths need. It wraps errors.ErrUnsupported, and the
// errors carry cilium/ebpf's ErrNotSupported when that was the cause, so
// errors.Is works with any of the three.
var ErrUnsupported = fmt.Errorf("ebpf datapath: %w", errors.ErrUnsupported)

// unsupported wraps err (a failed feature probe) as ErrUnsupported, in a
// kfeature.Unsupported naming what the kernel lacks.
func unsupported(what string, err error) error {
	return &kfeature.Unsupported{Feature: what, Detail: kfeature.Detail(err), Err: fmt.Errorf("%w: kernel lacks %s: %w", ErrUnsupported, what, err)}
}

// loadUnsupported words a failed program load: the kernel answers EINVAL
// without a verifier log, or ENOTSUPP, to a program type or attach point
// it does not know; a rejection with a log is our program's fault.
func loadUnsupported(what string, err error) error {
	var ve *cebpf.VerifierError
	if err == nil || (errors.As(err, &ve) && len(ve.Log) > 0) {
		// A verifier log: the kernel has the feature and refused our code.
		return maybeUnsupported(what, err)
	}
	if errors.Is(err, cebpf.ErrNotSupported) || errors.Is(err, unix.EINVAL) || errors.Is(err, kfeature.ENOTSUPP) || errors.Is(err, unix.EOPNOTSUPP) {
		return unsupported(what, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// maybeUnsupported marks err as ErrUnsupported when cilium/ebpf says the
// kernel does not support what was attempted.
func maybeUnsupported(what string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, cebpf.ErrNotSupported) {
		return unsupported(what, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// probeHelper asks the kernel whether programs of type pt may call fn
// (where names them in the error).
func probeHelper(pt cebpf.ProgramType, fn asm.BuiltinFunc, where string) error {
	if err := features.HaveProgramHelper(pt, fn); err != nil {
		return maybeUnsupported(fmt.Sprintf("helper %s in %s", fn, where), err)
	}
	return nil
}
