package ebpf

import (
	"errors"
	"fmt"

	cebpf "github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/cnibench/cnibench/internal/kfeature"
)

// ErrUnsupported is wrapped by every error caused by a kernel that lacks
// a feature the enforcer needs (it wraps errors.ErrUnsupported).
var ErrUnsupported = fmt.Errorf("ebpf policy: %w", errors.ErrUnsupported)

// unsupported wraps err (a failed probe) as a kfeature.Unsupported.
func unsupported(what string, err error) error {
	return &kfeature.Unsupported{Feature: what, Detail: kfeature.Detail(err), Err: fmt.Errorf("%w: kernel lacks %s: %w", ErrUnsupported, what, err)}
}

// loadUnsupported words a failed load: EINVAL without a verifier log, or
// "not supported", means the kernel lacks a map or program type.
func loadUnsupported(what string, err error) error {
	if errors.Is(err, cebpf.ErrNotSupported) || errors.Is(err, unix.EINVAL) || errors.Is(err, kfeature.ENOTSUPP) || errors.Is(err, unix.EOPNOTSUPP) {
		return unsupported(what, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}
