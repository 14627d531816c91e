package ebpf

import (
	"errors"
	"fmt"

	cebpf "github.com/cilium/ebpf"
)

// ErrUnsupported is wrapped by every error caused by a kernel that lacks a
// feature these datapaths need. It wraps errors.ErrUnsupported, and the
// errors carry cilium/ebpf's ErrNotSupported when that was the cause, so
// errors.Is works with any of the three.
var ErrUnsupported = fmt.Errorf("ebpf datapath: %w", errors.ErrUnsupported)

// unsupported wraps err (a failed feature probe) as ErrUnsupported.
func unsupported(what string, err error) error {
	return fmt.Errorf("%w: kernel lacks %s: %w", ErrUnsupported, what, err)
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
