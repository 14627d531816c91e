package labtest

import (
	"errors"
	"fmt"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/cnibench/cnibench/internal/kfeature"
)

func TestSkipIfUnsupported(t *testing.T) {
	for _, c := range []struct {
		err  error
		skip bool
	}{
		{fmt.Errorf("lab: %w", kfeature.Check("VXLAN links", unix.EOPNOTSUPP)), true},
		{fmt.Errorf("nft: %w", errors.ErrUnsupported), true},
		{errors.New("boom"), false},
		{nil, false},
	} {
		var skipped bool
		t.Run("", func(t *testing.T) {
			defer func() { skipped = t.Skipped() }()
			SkipIfUnsupported(t, c.err)
		})
		if skipped != c.skip {
			t.Errorf("SkipIfUnsupported(%v): skipped %v, want %v", c.err, skipped, c.skip)
		}
	}
}
