package toy_test

import (
	"os"
	"testing"

	"github.com/cnibench/cnibench/internal/hosttest"
)

// TestMain runs the tests next to a noisy neighbour when
// CNIBENCH_NOISY_NEIGHBOUR=1 (hosttest.RunMain).
func TestMain(m *testing.M) { os.Exit(hosttest.RunMain(m)) }
