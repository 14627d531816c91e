package ebpf

import (
	"testing"

	"github.com/cnibench/cnibench/internal/bpftest"
)

// The committed objects must come from the committed sources: every C
// source and header has the hash `go generate` recorded beside the
// objects, and no source is missing from the record.
func TestObjectsFresh(t *testing.T) { bpftest.ObjectsFresh(t, "datapath/ebpf") }
