package netnsx

import (
	"os"
	"sync"
)

// EnvJournal names a file to which every namespace CreateNamed creates is
// appended, one name a line. The tests set it (hosttest.RunMain) for
// themselves and every cnibench process they start, which inherit it, so
// their leftover check judges only the namespaces the tests made: on a
// busy host another cnibench, with its own --state-dir, may have cnb-
// labs up at the same time, and those are not the tests' to judge. Unset,
// nothing is written.
const EnvJournal = "CNIBENCH_NETNS_JOURNAL"

var journalMu sync.Mutex

// journal appends name to the EnvJournal file, if set. A name it could not
// write would be judged another tool's: the check still reports such
// names, it only does not fail on them.
func journal(name string) {
	path := os.Getenv(EnvJournal)
	if path == "" {
		return
	}
	journalMu.Lock()
	defer journalMu.Unlock()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	f.WriteString(name + "\n")
}
