package hosttest

import (
	"fmt"
	"os"
	"strings"
)

// envNetnsJournal is netnsx.EnvJournal (this package imports nothing of
// cnibench): the file every namespace netnsx.CreateNamed makes is written
// to, in the test binary and in every cnibench process it starts. The
// leftover check judges only those names: on a busy host another cnibench
// (its own --state-dir) may bring cnb- labs up while the tests run, and
// TestChurnRun's package failed on them.
const envNetnsJournal = "CNIBENCH_NETNS_JOURNAL"

// openJournal makes the journal file and points envNetnsJournal at it,
// unless a parent test binary already did (a re-run in a private mount
// namespace writes to its parent's). done removes the file it made.
func openJournal() (path string, done func()) {
	if p := os.Getenv(envNetnsJournal); p != "" {
		return p, func() {}
	}
	f, err := os.CreateTemp("", "cnibench-netns-journal-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "hosttest: %v: every new lab namespace counts as the tests'\n", err)
		return "", func() {}
	}
	f.Close()
	os.Setenv(envNetnsJournal, f.Name())
	return f.Name(), func() {
		os.Unsetenv(envNetnsJournal)
		os.Remove(f.Name())
	}
}

// journaled reports whether the tests made namespace name: it is in the
// journal at path. Without a journal ("") every name is the tests'.
func journaled(path, name string) bool {
	if path == "" {
		return true
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return true
	}
	for _, line := range strings.Split(string(b), "\n") {
		if line == name {
			return true
		}
	}
	return false
}
