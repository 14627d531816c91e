// Package kfeature tells "this kernel lacks a feature a scenario needs"
// (VXLAN links, a BPF program type or helper, an nftables expression)
// apart from every other failure, so the CLI can say "unsupported" in one
// line and tests can skip instead of failing or crashing.
package kfeature

import (
	"errors"
	"fmt"
	"strings"

	"golang.org/x/sys/unix"
)

// ENOTSUPP is the kernel-internal "operation not supported" (524) that
// some paths (BPF, netlink) leak to user space; x/sys has no name for it.
const ENOTSUPP = unix.Errno(524)

// Unsupported is a kernel (or its tool) lacking Feature. errors.Is(err,
// errors.ErrUnsupported) holds for it, and its cause stays reachable.
type Unsupported struct {
	Feature string // what was missing: "VXLAN links", "BPF program type ..."
	Detail  string // the kernel's or the tool's words
	Err     error  // the cause
}

// Format is Unsupported's text, the line the CLI prints (quoted in
// README's "Recovery" section).
const Format = "unsupported: %s on this kernel (%s)"

// Error is "unsupported: <feature> on this kernel (<detail>)".
func (e *Unsupported) Error() string { return fmt.Sprintf(Format, e.Feature, e.Detail) }

// Unwrap makes errors.Is work with errors.ErrUnsupported and the cause.
func (e *Unsupported) Unwrap() []error { return []error{errors.ErrUnsupported, e.Err} }

// notSupported are the errnos that mean "the kernel lacks it" wherever
// they come from.
var notSupported = []error{unix.EOPNOTSUPP, ENOTSUPP, unix.EAFNOSUPPORT, unix.EPROTONOSUPPORT, errors.ErrUnsupported}

// Check returns err as *Unsupported when it says the kernel lacks
// feature: an "operation not supported" errno (EOPNOTSUPP, ENOTSUPP,
// EAFNOSUPPORT, EPROTONOSUPPORT), an error already wrapping
// errors.ErrUnsupported, or one of also, the errors that mean a missing
// feature at this call only (EINVAL from a BPF program load that passed
// the verifier, ENOENT from a module or nftables expression lookup).
// Any other error, and nil, is returned as it is.
func Check(feature string, err error, also ...error) error {
	if err == nil {
		return nil
	}
	if u, ok := As(err); ok {
		return u
	}
	for _, target := range append(notSupported, also...) {
		if errors.Is(err, target) {
			return &Unsupported{Feature: feature, Detail: Detail(err), Err: err}
		}
	}
	return err
}

// As finds the *Unsupported in err's chain.
func As(err error) (*Unsupported, bool) {
	var u *Unsupported
	ok := errors.As(err, &u)
	return u, ok
}

// Detail is err's text on one line, with the errno's name when err
// carries one ("operation not supported" alone does not say which).
func Detail(err error) string {
	s := strings.Join(strings.Fields(err.Error()), " ")
	var errno unix.Errno
	if !errors.As(err, &errno) {
		return s
	}
	name := unix.ErrnoName(errno)
	switch errno {
	case unix.EOPNOTSUPP: // x/sys names 95 ENOTSUP; the kernel, EOPNOTSUPP
		name = "EOPNOTSUPP"
	case ENOTSUPP:
		name = "ENOTSUPP"
	}
	if name != "" && !strings.Contains(s, "["+name+"]") {
		s += " [" + name + "]"
	}
	return s
}
