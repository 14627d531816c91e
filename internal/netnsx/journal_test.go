package netnsx

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// CreateNamed writes each name it makes to the journal the tests' leftover
// check reads (hosttest.RunMain sets EnvJournal); nothing without it.
func TestCreateNamedJournals(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal")
	t.Setenv(EnvJournal, path)
	name := testNS(t)
	b, err := os.ReadFile(path)
	if err != nil || !strings.Contains("\n"+string(b), "\n"+name+"\n") {
		t.Errorf("journal %q (%v), want the line %s", b, err, name)
	}
	t.Setenv(EnvJournal, "")
	os.Remove(path)
	testNS(t)
	if _, err := os.Stat(path); err == nil {
		t.Error("a journal written with EnvJournal empty")
	}
}
