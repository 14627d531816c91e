package wireguard

import (
	"errors"
	"os"
	"strings"
	"testing"
)

// A module is found by reading only: one in /sys/module is there; one
// nowhere is an explicit "unsupported" that says none is installed.
func TestKernelModule(t *testing.T) {
	ents, err := os.ReadDir("/sys/module")
	if err != nil || len(ents) == 0 {
		t.Skipf("no /sys/module here: %v", err)
	}
	if err := kernelModule("something", ents[0].Name(), "x"); err != nil {
		t.Errorf("%s, listed in /sys/module: %v", ents[0].Name(), err)
	}
	err = kernelModule("Nothing at all", "cnb_no_such_module", "x")
	if !errors.Is(err, errors.ErrUnsupported) || !strings.Contains(err.Error(), "unsupported: Nothing at all on this kernel (no cnb_no_such_module module loaded or built in, and none installed)") {
		t.Errorf("a missing module: %v", err)
	}
}
