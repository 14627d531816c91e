package hosttest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// labPrefix starts the name of every lab namespace (lab.Prefix's "cnb-").
const labPrefix = "cnb-"

// netnsList is `ip netns list`: the names it prints and the lines it could
// not resolve ("Peer netns reference is invalid": a name whose mount is
// covered or gone). nil, nil without root or iproute2.
func netnsList() (names []string, broken []string) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	out, err := exec.Command("ip", "netns", "list").CombinedOutput()
	if err != nil {
		return nil, nil
	}
	for _, line := range strings.Split(string(out), "\n") {
		switch f := strings.Fields(line); {
		case len(f) == 0:
		case strings.Contains(line, "invalid"):
			broken = append(broken, strings.TrimSpace(line))
		default:
			names = append(names, f[0])
		}
	}
	return names, broken
}

// checkNamespaces runs run and fails it (exit 1, with the names) when it
// leaves a lab namespace that was not there before and that the tests
// made (in the journal at path, see journal.go), or a name `ip netns list`
// cannot resolve. Namespaces of other tools are not ours to judge: a new
// cnb- one the tests did not make (another cnibench's lab) is reported,
// not failed.
func checkNamespaces(path string, run func() int) int {
	before, brokenBefore := netnsList()
	code := run()
	after, brokenAfter := netnsList()
	var left, others []string
	for _, n := range after {
		switch {
		case !strings.HasPrefix(n, labPrefix) || slices.Contains(before, n):
		case journaled(path, n):
			left = append(left, n)
		default:
			others = append(others, n)
		}
	}
	if len(others) > 0 {
		fmt.Fprintf(os.Stderr, "hosttest: lab namespaces the tests did not make appeared meanwhile (another cnibench?), not judged (%d): %s\n", len(others), strings.Join(others, " "))
	}
	if len(left) > 0 {
		fmt.Fprintf(os.Stderr, "hosttest: the tests left lab namespaces in `ip netns list` (%d): %s\n", len(left), strings.Join(left, " "))
	}
	if len(brokenAfter) > len(brokenBefore) {
		fmt.Fprintf(os.Stderr, "hosttest: `ip netns list` has %d unresolvable names after the tests (%d before): %s\n",
			len(brokenAfter), len(brokenBefore), brokenAfter[0])
	}
	if (len(left) > 0 || len(brokenAfter) > len(brokenBefore)) && code == 0 {
		code = 1
	}
	return code
}

// lockLabTests makes the test binaries of lab-test packages take turns
// (go test runs packages in parallel unless -p 1): their labs would
// measure each other, and one package's lab would count as another's
// leftover. A flock, so a killed binary never holds it.
func lockLabTests() (unlock func()) {
	// A test binary re-run by a test (in a private mount namespace, as a
	// neighbour) runs under its parent's turn: it inherits this variable.
	if os.Geteuid() != 0 || os.Getenv(envLabTestsLocked) != "" {
		return func() {}
	}
	path := filepath.Join(os.TempDir(), "cnibench-lab-tests.lock")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		fmt.Fprintf(os.Stderr, "hosttest: %v: the lab tests run without taking turns\n", err)
		return func() {}
	}
	if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
		fmt.Fprintf(os.Stderr, "hosttest: waiting for another package's lab tests (%s)\n", path)
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
			fmt.Fprintf(os.Stderr, "hosttest: lock %s: %v\n", path, err)
		}
	}
	os.Setenv(envLabTestsLocked, fmt.Sprint(os.Getpid()))
	return func() { f.Close() }
}

// envLabTestsLocked marks processes started by a test binary that holds
// the lab-tests lock.
const envLabTestsLocked = "CNIBENCH_LAB_TESTS_LOCKED"
