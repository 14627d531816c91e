package cli

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/cnibench/cnibench/internal/kfeature"
)

// A kernel without a feature prints one line naming it, not the path of
// wrappers that led there; with a failed cleanup beside it, both show.
func TestUnsupportedOneLine(t *testing.T) {
	u := kfeature.Check("VXLAN links", fmt.Errorf("create vxlan0: %w", unix.EOPNOTSUPP))
	err := fmt.Errorf(`lab "vx": node0: %w`, u)
	var out strings.Builder
	if code := exitStatus(&out, err, 0); code != 1 {
		t.Errorf("exit %d", code)
	}
	if want := "cnibench: unsupported: VXLAN links on this kernel (create vxlan0: operation not supported [EOPNOTSUPP])\n"; out.String() != want {
		t.Errorf("printed %q, want %q", out.String(), want)
	}
	out.Reset()
	exitStatus(&out, errors.Join(err, errors.New(`lab "vx" down: busy`)), 0)
	if s := out.String(); !strings.Contains(s, "unsupported: VXLAN links") || !strings.Contains(s, "down: busy") {
		t.Errorf("printed %q", s)
	}
}
