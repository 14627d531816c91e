package hosttest

import (
	"os"
	"strings"
	"testing"
	"time"
)

// The neighbour does what it says (namespaces with its rules come and go,
// ip_forward toggles) and leaves the root namespace and `ip netns list` as
// it found them.
func TestNeighbourLeavesNothing(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the noisy neighbour needs root")
	}
	before := Take(t)
	fwd, _ := os.ReadFile(ipForward)
	n := &Neighbour{Every: 10 * time.Millisecond}
	if err := n.Start(); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	deadline := time.Now().Add(10 * time.Second)
	for len(seen) < 3 && time.Now().Before(deadline) {
		for _, ns := range n.Leftovers() {
			seen[ns] = true
		}
		time.Sleep(5 * time.Millisecond)
	}
	s, err := n.Stop()
	t.Logf("%s; namespaces seen in ip netns list: %d", s, len(seen))
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) < 3 || (s.Toggles == 0 && strings.TrimSpace(string(fwd)) == "0") {
		t.Errorf("saw %d of its namespaces, %d toggles: it did too little to be a neighbour", len(seen), s.Toggles)
	}
	for ns := range seen {
		if !strings.HasPrefix(ns, "noisy-") {
			t.Errorf("namespace %q is not named noisy-…", ns)
		}
	}
	if now, _ := os.ReadFile(ipForward); string(now) != string(fwd) {
		t.Errorf("root ip_forward %q, was %q", now, fwd)
	}
	if d := Diff(before, Take(t)); len(d) > 0 {
		t.Errorf("root namespace changed:\n%s", strings.Join(d, "\n"))
	}
}
