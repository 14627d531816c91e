package ebpf

import (
	"os"
	"testing"

	"github.com/cnibench/cnibench/internal/hosttest"
)

func TestMain(m *testing.M) { os.Exit(hosttest.RunMain(m)) }
