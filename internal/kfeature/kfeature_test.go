package kfeature

import (
	"errors"
	"fmt"
	"io/fs"
	"testing"

	"golang.org/x/sys/unix"
)

// Every errno that means "not supported" maps to Unsupported, EINVAL and
// ENOENT only where the caller says they mean a missing feature, and
// nothing else is touched.
func TestCheck(t *testing.T) {
	for _, c := range []struct {
		err         error
		also        []error
		unsupported bool
		detail      string
	}{
		{fmt.Errorf("create vxlan0: %w", unix.EOPNOTSUPP), nil, true, "create vxlan0: operation not supported [EOPNOTSUPP]"},
		{fmt.Errorf("load program: %w", ENOTSUPP), nil, true, "load program: errno 524 [ENOTSUPP]"},
		{unix.EAFNOSUPPORT, nil, true, "address family not supported by protocol [EAFNOSUPPORT]"},
		{unix.EPROTONOSUPPORT, nil, true, "protocol not supported [EPROTONOSUPPORT]"},
		{fmt.Errorf("nft: %w: Error: Could not process rule", errors.ErrUnsupported), nil, true, "nft: unsupported operation: Error: Could not process rule"},
		{fmt.Errorf("load program: %w", unix.EINVAL), []error{unix.EINVAL}, true, "load program: invalid argument [EINVAL]"},
		{fmt.Errorf("nft: %w", unix.ENOENT), []error{unix.ENOENT}, true, "nft: no such file or directory [ENOENT]"},
		{fmt.Errorf("load program: %w", unix.EINVAL), nil, false, ""},
		{fmt.Errorf("open: %w", fs.ErrNotExist), nil, false, ""},
		{unix.EPERM, []error{unix.EINVAL}, false, ""},
	} {
		got := Check("X", c.err, c.also...)
		u, ok := As(got)
		if ok != c.unsupported {
			t.Errorf("Check(%v, also %v) = %v: unsupported %v, want %v", c.err, c.also, got, ok, c.unsupported)
			continue
		}
		if !ok {
			if got != c.err {
				t.Errorf("Check changed %v into %v", c.err, got)
			}
			continue
		}
		if u.Detail != c.detail || got.Error() != "unsupported: X on this kernel ("+c.detail+")" {
			t.Errorf("Check(%v) = %q, detail %q; want detail %q", c.err, got, u.Detail, c.detail)
		}
		if !errors.Is(got, errors.ErrUnsupported) || !errors.Is(got, c.err) {
			t.Errorf("%v: errors.Is loses ErrUnsupported or the cause", got)
		}
	}
	if Check("X", nil) != nil {
		t.Error("Check(nil) is not nil")
	}
	inner := Check("VXLAN links", unix.EOPNOTSUPP)
	if u, _ := As(Check("other", fmt.Errorf("lab: %w", inner))); u.Feature != "VXLAN links" {
		t.Errorf("an Unsupported already in the chain was renamed %q", u.Feature)
	}
}
