package hosttest

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// toggleLockPath is locked exclusively by a noisy neighbour for the whole
// of each ip_forward flip-and-restore, and shared by Take while it reads
// the root's sysctls: a snapshot never sees a neighbour's transient value,
// and two neighbours (one per test binary) never take each other's flipped
// value for the original.
const toggleLockPath = "/tmp/cnibench-noisy-sysctl.lock"

// lockToggles takes the toggle lock, shared or exclusive, and returns its
// release.
func lockToggles(exclusive bool) (func(), error) {
	f, err := os.OpenFile(toggleLockPath, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("toggle lock: %w", err)
	}
	how := unix.LOCK_SH
	if exclusive {
		how = unix.LOCK_EX
	}
	if err := unix.Flock(int(f.Fd()), how); err != nil {
		f.Close()
		return nil, fmt.Errorf("toggle lock: %w", err)
	}
	return func() { f.Close() }, nil
}
