package ambientpart_test

import (
	"os"
	"testing"

	"github.com/cnibench/cnibench/internal/hosttest"
)

// TestMain fails the package if a test leaves a cnb- namespace.
func TestMain(m *testing.M) { os.Exit(hosttest.RunMain(m)) }
