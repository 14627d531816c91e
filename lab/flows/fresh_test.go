package flows

import (
	"testing"

	"github.com/cnibench/cnibench/internal/bpftest"
)

// The committed object must come from the committed sources (see
// bpftest.ObjectsFresh).
func TestObjectsFresh(t *testing.T) { bpftest.ObjectsFresh(t, "lab/flows") }
