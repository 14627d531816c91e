package agent

import (
	"os"
	"testing"

	"github.com/cnibench/cnibench/internal/hosttest"
)

// TestMain runs the tests in a network namespace of their own (agents on
// 127.0.0.1 use the engines' fixed ports, which another program on a
// shared host may hold), next to a noisy neighbour when
// CNIBENCH_NOISY_NEIGHBOUR=1 (hosttest.RunInPrivateNetwork).
func TestMain(m *testing.M) { os.Exit(hosttest.RunInPrivateNetwork(m)) }
