package netnsx

import (
	"errors"
	"fmt"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// runDirMu serialises shareRunDir within the process, so two labs brought
// up at once do not both bind /run/netns on itself.
var runDirMu sync.Mutex

// shareRunDir makes RunDir a shared mount before a namespace is mounted in
// it, as iproute2's `ip netns add` does: mount --make-rshared, and if RunDir
// is not a mount point yet (EINVAL), bind it on itself first. On a plain
// directory another tool's `ip netns add` would bind it on itself later and
// hide our namespace mounts underneath (remove then fails with EBUSY); on a
// shared mount that tool only re-marks it shared, and a neighbour's
// `mount --rbind /run/netns /run/netns` becomes a peer, so unmounts propagate.
// Mount changes apply to the whole mount namespace, so any thread may do it.
func shareRunDir() error {
	runDirMu.Lock()
	defer runDirMu.Unlock()
	if err := os.MkdirAll(RunDir, 0o755); err != nil {
		return err
	}
	bound := false
	for {
		err := unix.Mount("", RunDir, "none", unix.MS_SHARED|unix.MS_REC, "")
		if err == nil {
			return nil
		}
		if !errors.Is(err, unix.EINVAL) || bound {
			return fmt.Errorf("make %s a shared mount: %w", RunDir, err)
		}
		if err := unix.Mount(RunDir, RunDir, "none", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("bind-mount %s on itself: %w", RunDir, err)
		}
		bound = true
	}
}
