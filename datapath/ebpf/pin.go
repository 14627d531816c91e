package ebpf

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	cebpf "github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// Pinning lets a datapath outlive the process that made it (`cnibench lab
// up` exits; `run` and `lab down` come later): with Options.PinDir the
// maps and the links are pinned there, a later constructor with the same
// PinDir takes them over, Release leaves them in place, and Close (or
// RemovePinned, for crash cleanup) removes them. PinDir is meant to be a
// private bpffs instance under the lab's state directory, so unmounting it
// drops every pin at once and nothing is left in a shared /sys/fs/bpf.

// bpffsMagic is BPF_FS_MAGIC (statfs f_type of a bpffs).
const bpffsMagic = 0xcafe4a11

// onBPFFS reports whether dir is on a bpf filesystem.
func onBPFFS(dir string) bool {
	var st unix.Statfs_t
	return unix.Statfs(dir, &st) == nil && uint32(st.Type) == bpffsMagic
}

// EnsureBPFFS makes dir a place to pin BPF objects: created if missing, and
// a private bpffs instance mounted on it unless it already is on one. It
// reports whether it mounted.
func EnsureBPFFS(dir string) (mounted bool, err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return false, fmt.Errorf("ebpf: pin dir: %w", err)
	}
	if onBPFFS(dir) {
		return false, nil
	}
	if err := unix.Mount("bpffs", dir, "bpf", 0, "mode=0700"); err != nil {
		if errors.Is(err, unix.ENODEV) {
			return false, unsupported("bpffs", err)
		}
		return false, fmt.Errorf("ebpf: mount bpffs on %s: %w", dir, err)
	}
	return true, nil
}

// RemovePinned removes every pin in dir (detaching what only the pins kept
// attached), unmounts dir if it is a bpffs mount point, and removes dir.
// A missing dir is not an error. For cleanup after a crash; Close does the
// same for a live datapath. The kernel releases links whose last reference
// was a pin from a work queue, so their detaching may lag this call by a
// moment (deleting the cgroup or namespace detaches them anyway).
func RemovePinned(dir string) error {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("ebpf: %w", err)
	}
	if !onBPFFS(dir) {
		return fmt.Errorf("ebpf: %s is not on a bpf filesystem: not removing its %d entries", dir, len(ents))
	}
	var errs []error
	for _, e := range ents {
		if preloaded[e.Name()] {
			continue
		}
		if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
			errs = append(errs, err)
		}
	}
	if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) {
		errs = append(errs, fmt.Errorf("unmount %s: %w", dir, err))
	}
	if err := os.Remove(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("ebpf: remove pins in %s: %w", dir, err)
	}
	return nil
}

// pinPath is where object name is pinned ("" without PinDir).
func (c *core) pinPath(name string) string {
	if c.opts.PinDir == "" {
		return ""
	}
	return filepath.Join(c.opts.PinDir, name)
}

// pinnedMaps opens the maps pinned in PinDir, or returns nil if there are
// none (a first start).
func (c *core) pinnedMaps() (map[string]*cebpf.Map, error) {
	if _, err := os.Stat(c.pinPath(mapSvc)); errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	out := map[string]*cebpf.Map{}
	for _, name := range []string{mapSvc, mapBe, c.m.flowMap} {
		m, err := cebpf.LoadPinnedMap(c.pinPath(name), nil)
		if err != nil {
			for _, m := range out {
				m.Close()
			}
			return nil, fmt.Errorf("%s: open pinned %s: %w", c.m.name, name, err)
		}
		out[name] = m
	}
	return out, nil
}

// pinMaps pins objs' maps in PinDir, replacing pins of earlier maps.
func (c *core) pinMaps(objs *objects) error {
	if c.opts.PinDir == "" {
		return nil
	}
	for name, m := range map[string]*cebpf.Map{mapSvc: objs.svc, mapBe: objs.be, c.m.flowMap: objs.flow} {
		p := c.pinPath(name)
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("%s: unpin %s: %w", c.m.name, name, err)
		}
		if err := m.Pin(p); err != nil {
			return fmt.Errorf("%s: pin %s: %w", c.m.name, name, err)
		}
	}
	return nil
}

// unpinAll removes our map pins, and PinDir itself (unmounting it if it is
// a bpffs mount point) once it is empty.
func (c *core) unpinAll() error {
	if c.opts.PinDir == "" {
		return nil
	}
	var errs []error
	for _, name := range []string{mapSvc, mapBe, c.m.flowMap} {
		if err := os.Remove(c.pinPath(name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if empty(c.opts.PinDir) {
		// An empty bpffs mount point (its parent is not on bpffs): ours.
		if onBPFFS(c.opts.PinDir) && !onBPFFS(filepath.Dir(c.opts.PinDir)) {
			if err := unix.Unmount(c.opts.PinDir, unix.MNT_DETACH); err != nil {
				errs = append(errs, fmt.Errorf("unmount %s: %w", c.opts.PinDir, err))
			}
		}
		os.Remove(c.opts.PinDir)
	}
	return errors.Join(errs...)
}

// unpinFile removes a pin; a missing pin (or no PinDir: "") is not an error.
func unpinFile(path string) error {
	if path == "" {
		return nil
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("unpin %s: %w", path, err)
	}
	return nil
}

// preloaded are the files the kernel puts in every bpffs root (bpf_preload
// iterators); they cannot be removed and go with the mount.
var preloaded = map[string]bool{"maps.debug": true, "progs.debug": true}

// empty reports whether dir holds nothing but preloaded files.
func empty(dir string) bool {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range ents {
		if !preloaded[e.Name()] {
			return false
		}
	}
	return true
}
