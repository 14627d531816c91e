package labtest

import (
	"errors"
	"testing"

	"github.com/cnibench/cnibench/internal/kfeature"
)

// SkipIfUnsupported skips the test when err says this kernel (or a tool it
// needs) lacks a feature: a kfeature.Unsupported, or any error wrapping
// errors.ErrUnsupported. Any other error is left to the caller.
func SkipIfUnsupported(t testing.TB, err error) {
	t.Helper()
	if u, ok := kfeature.As(err); ok {
		t.Skip(u.Error())
	}
	if errors.Is(err, errors.ErrUnsupported) {
		t.Skipf("unsupported here: %v", err)
	}
}
