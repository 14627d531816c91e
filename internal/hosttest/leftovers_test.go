package hosttest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// A lab namespace the tests made (in the journal) and left fails the run;
// one that was there before, or that another tool made meanwhile (not in
// the journal: another cnibench's lab), does not.
func TestCheckNamespacesFailsOnALeftover(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("adding a namespace needs root")
	}
	journal := filepath.Join(t.TempDir(), "journal")
	name := fmt.Sprintf("%shosttest-leak-%d", labPrefix, os.Getpid())
	t.Cleanup(func() { exec.Command("ip", "netns", "del", name).Run() })
	add := func(name string, ours bool) {
		if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
			t.Fatalf("ip netns add: %v: %s", err, out)
		}
		if ours {
			if err := os.WriteFile(journal, []byte("cnb-other\n"+name+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	code := checkNamespaces(journal, func() int { add(name, true); return 0 })
	if code != 1 {
		t.Errorf("a namespace the tests made and left: exit %d, want 1", code)
	}
	if code := checkNamespaces(journal, func() int { return 0 }); code != 0 {
		t.Errorf("a namespace that was there before: exit %d, want 0", code)
	}
	other := fmt.Sprintf("%shosttest-other-%d", labPrefix, os.Getpid())
	t.Cleanup(func() { exec.Command("ip", "netns", "del", other).Run() })
	if code := checkNamespaces(journal, func() int { add(other, false); return 0 }); code != 0 {
		t.Errorf("a namespace another tool made meanwhile: exit %d, want 0", code)
	}
	if code := checkNamespaces(journal, func() int { return 7 }); code != 7 {
		t.Errorf("the tests' own code: %d, want 7", code)
	}
}
