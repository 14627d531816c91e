package k8starget

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/cnibench/cnibench/agent"
	"github.com/cnibench/cnibench/internal/hosttest"
	"github.com/cnibench/cnibench/lab"
)

// agentControlEnv makes the test binary run as a real cnibench agent (the
// agent package's Serve, as `cnibench agent` runs it) on that control
// address, until its stdin closes. Lab tests start it inside lab
// namespaces without building the whole CLI.
const agentControlEnv = "CNIBENCH_K8S_TEST_AGENT_CONTROL"

func TestMain(m *testing.M) {
	if control := os.Getenv(agentControlEnv); control != "" {
		ctx, cancel := context.WithCancel(context.Background())
		go func() { _, _ = io.Copy(io.Discard, os.Stdin); cancel() }()
		if err := agent.Serve(ctx, agent.Config{Control: control, Token: os.Getenv(agent.TokenEnv)}); err != nil {
			fmt.Fprintln(os.Stderr, "agent:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(hosttest.RunMain(m)) // next to a noisy neighbour when CNIBENCH_NOISY_NEIGHBOUR=1
}

// needRoot skips tests that build labs when not root.
func needRoot(t *testing.T) {
	t.Helper()
	if err := lab.RequirePrivileges(); err != nil {
		t.Skipf("skipping: %v", err)
	}
}

// newLab brings up a lab with a unique name (every object prefixed
// cnb-<name>-), taken down at cleanup, also on failure.
func newLab(t *testing.T, nodes, pods int) *lab.Lab {
	t.Helper()
	needRoot(t)
	dir, err := os.MkdirTemp("", "cnbk")
	if err != nil {
		t.Fatal(err)
	}
	cfg := lab.Config{Name: fmt.Sprintf("k%06d", rand.IntN(1000000)), Nodes: nodes, PodsPerNode: pods, StateDir: dir}
	t.Cleanup(func() {
		if _, err := lab.Down(dir, cfg.Name); err != nil {
			t.Errorf("lab down: %v", err)
		}
		os.RemoveAll(dir)
	})
	l, err := lab.Up(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return l
}
