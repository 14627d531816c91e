package hosttest

import (
	"os"
	"testing"
)

// TestMain serves the neighbour's process for TestNeighbourLeavesNothing.
func TestMain(m *testing.M) { os.Exit(RunMain(m)) }
