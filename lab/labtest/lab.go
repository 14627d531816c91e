package labtest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/cnibench/cnibench/internal/netnsx"
	"github.com/cnibench/cnibench/lab"
)

// NeedRoot skips the test unless the process may build namespaces.
func NeedRoot(t *testing.T) {
	t.Helper()
	if err := lab.RequirePrivileges(); err != nil {
		t.Skipf("skipping: %v", err)
	}
}

// ScratchNS creates an empty namespace cnb-c1-<tag>-<random>, removed at
// cleanup, and returns its path.
func ScratchNS(t *testing.T, tag string) string {
	t.Helper()
	NeedRoot(t)
	name := fmt.Sprintf("cnb-c1-%s-%06d", tag, rand.IntN(1000000))
	t.Cleanup(func() {
		if err := netnsx.DeleteNamed(name); err != nil {
			t.Errorf("delete %s: %v", name, err)
		}
	})
	if err := netnsx.CreateNamed([]string{name}, func(string) {}); err != nil {
		t.Fatal(err)
	}
	return netnsx.Path(name)
}

// NewLab brings up a 2-node lab with one pod per node, named
// <prefix><random> so that concurrent packages never collide, and takes it
// down at cleanup.
func NewLab(t *testing.T, prefix string) *lab.Lab { return NewLabSized(t, prefix, 2, 1) }

// NewLabSized is NewLab with nodes nodes of podsPerNode pods.
func NewLabSized(t *testing.T, prefix string, nodes, podsPerNode int) *lab.Lab {
	t.Helper()
	NeedRoot(t)
	cfg := lab.Config{Name: fmt.Sprintf("%s%06d", prefix, rand.IntN(1000000)), Nodes: nodes, PodsPerNode: podsPerNode, StateDir: t.TempDir()}
	t.Cleanup(func() {
		if _, err := lab.Down(cfg.StateDir, cfg.Name); err != nil {
			t.Errorf("lab down: %v", err)
		}
	})
	l, err := lab.Up(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// Endpoint is l's endpoint name, failing the test if there is none.
func Endpoint(t *testing.T, l *lab.Lab, name string) lab.Endpoint {
	t.Helper()
	ep, err := l.Endpoint(name)
	if err != nil {
		t.Fatal(err)
	}
	return ep
}
