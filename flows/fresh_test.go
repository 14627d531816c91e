package flows

import (
	"testing"

	"github.com/cnibench/cnibench/internal/labtest"
)

// The committed object must come from the committed sources (see
// labtest.CheckBPFSourcesFresh).
func TestObjectsFresh(t *testing.T) { labtest.CheckBPFSourcesFresh(t, "./flows") }
