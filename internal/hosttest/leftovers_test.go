package hosttest

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
)

// A lab namespace the tests leave fails the run; one that was there before
// does not.
func TestCheckNamespacesFailsOnALeftover(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("adding a namespace needs root")
	}
	name := fmt.Sprintf("%shosttest-leak-%d", labPrefix, os.Getpid())
	t.Cleanup(func() { exec.Command("ip", "netns", "del", name).Run() })
	code := checkNamespaces(func() int {
		if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
			t.Fatalf("ip netns add: %v: %s", err, out)
		}
		return 0
	})
	if code != 1 {
		t.Errorf("a namespace left by the tests: exit %d, want 1", code)
	}
	if code := checkNamespaces(func() int { return 0 }); code != 0 {
		t.Errorf("a namespace that was there before: exit %d, want 0", code)
	}
	if code := checkNamespaces(func() int { return 7 }); code != 7 {
		t.Errorf("the tests' own code: %d, want 7", code)
	}
}
