package suite

import (
	"os"
	"testing"

	"github.com/cnibench/cnibench/internal/hosttest"
)

// TestMain runs the tests in a network namespace of their own: they start
// agents on 127.0.0.1 at the engines' fixed ports, which another program
// on a shared host may hold (hosttest.RunInPrivateNetwork).
func TestMain(m *testing.M) { os.Exit(hosttest.RunInPrivateNetwork(m)) }
