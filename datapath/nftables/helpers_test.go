package nftables

import (
	"testing"

	"github.com/cnibench/cnibench/lab/labtest"
)

// newOrSkip builds a Datapath, closed at cleanup, skipping when the machine
// cannot.
func newOrSkip(t *testing.T, ns string, opts Options) *Datapath {
	t.Helper()
	d, err := newDatapath(ns, opts)
	return labtest.OrSkip(t, d, err)
}
