package hosttest

import (
	"fmt"
	"os"
	"testing"
)

// EnvNoisyNeighbour set to 1 makes RunMain run a noisy neighbour next to
// every test of the binary (scripts/test.sh passes it through: the suite
// on a busy host).
const EnvNoisyNeighbour = "CNIBENCH_NOISY_NEIGHBOUR"

// RunMain runs the tests, next to a Neighbour when EnvNoisyNeighbour is 1
// and the binary runs as root (it needs root to add namespaces; lab tests
// skip without it anyway). The neighbour's own failures fail the run. Call
// it from the TestMain of a package with lab tests:
// os.Exit(hosttest.RunMain(m)).
//
// Afterwards `ip netns list` must be as clean as before: a cnb-…
// namespace the tests made (journal.go) and left, or a name iproute2 can no longer resolve
// ("Peer netns reference is invalid"), fails the run (leftovers.go).
//
// RunMain also serves the neighbour's own process (Neighbour.Start runs
// the test binary again): call it before any other work of TestMain, and
// put that work in m's Run.
func RunMain(m interface{ Run() int }) int {
	if cfg := os.Getenv(envChild); cfg != "" {
		return serveChild(cfg)
	}
	if InPrivateNetwork() {
		if err := loopbackUp(); err != nil {
			fmt.Fprintf(os.Stderr, "private network namespace: %v\n", err)
			return 1
		}
	}
	unlock := lockLabTests()
	defer unlock()
	path, done := openJournal()
	defer done()
	return checkNamespaces(path, func() int { return runMaybeNoisy(m) })
}

// runMaybeNoisy runs the tests, next to a Neighbour when asked.
func runMaybeNoisy(m interface{ Run() int }) int {
	switch v := os.Getenv(EnvNoisyNeighbour); {
	case v == "" || v == "0":
		return m.Run()
	case v != "1":
		fmt.Fprintf(os.Stderr, "%s=%q: want 1 (run a noisy neighbour) or 0\n", EnvNoisyNeighbour, v)
		return 2
	case os.Geteuid() != 0:
		fmt.Fprintf(os.Stderr, "%s=1: not root, no noisy neighbour\n", EnvNoisyNeighbour)
		return m.Run()
	}
	n := &Neighbour{}
	if err := n.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	code := m.Run()
	s, err := n.Stop()
	fmt.Fprintf(os.Stderr, "noisy neighbour: %s\n", s)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// StartNoisyNeighbour runs a Neighbour (commands prefixed with wrap) until
// the test ends or calls StopFor; its own failures (a command that failed,
// a namespace it left) fail the test.
func StartNoisyNeighbour(t testing.TB, wrap ...string) *Neighbour {
	t.Helper()
	n := &Neighbour{Wrap: wrap}
	if err := n.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.StopFor(t) })
	return n
}

// StopFor stops the neighbour (once: later calls do nothing), logs what it
// did and fails t on its errors.
func (n *Neighbour) StopFor(t testing.TB) {
	t.Helper()
	if n.reported {
		return
	}
	n.reported = true
	s, err := n.Stop()
	t.Logf("noisy neighbour: %s", s)
	if err != nil {
		t.Error(err)
	}
}
