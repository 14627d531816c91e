package netnsx

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// A namespace mount can end up hidden under another mount: when RunDir was
// a plain directory and another tool bound it on itself (iproute2 does that
// on its first `ip netns add`, `mount --rbind /run/netns /run/netns` too),
// our mounts stay attached to the directory underneath and the path now
// shows the cover. The kernel then refuses to remove the file (EBUSY) while
// the hidden mount exists, and no path reaches that mount to unmount it.
//
// What does reach it: a file handle. name_to_handle_at(/run/netns) names the
// directory itself (the cover is a bind of the same directory), and
// open_by_handle_at with a descriptor of the lower mount opens that
// directory *in the lower mount*; a lookup from there crosses into the
// hidden namespace mount, which umount2 accepts through /proc/self/fd. The
// cover, and whatever other tools mounted in it, is never touched.

// mountIDOf returns the mountinfo ID of the mount fd (or path, relative to
// fd) is on.
func mountIDOf(fd int, path string) (int, error) {
	var stx unix.Statx_t
	flags := unix.AT_SYMLINK_NOFOLLOW
	if path == "" {
		flags |= unix.AT_EMPTY_PATH
	}
	if err := unix.Statx(fd, path, flags, unix.STATX_MNT_ID, &stx); err != nil {
		return 0, err
	}
	if stx.Mask&unix.STATX_MNT_ID == 0 {
		return 0, errors.New("statx: kernel gives no mount id (needs Linux 5.8)")
	}
	return int(stx.Mnt_id), nil
}

// hiddenBases returns the IDs of the lower mounts that hold hidden namespace
// mounts at Path(name), and how many such mounts there are. A mount at Path(name) is reachable when its
// parent is the mount RunDir resolves to, or a reachable mount stacked at
// the same path; any other nsfs mount there is hidden.
func hiddenBases(mounts []mount, top int, name string) (bases []int, hidden int) {
	p := Path(name)
	at := map[int]mount{}
	for _, m := range mounts {
		if m.Point == p {
			at[m.ID] = m
		}
	}
	reachable := func(m mount) bool {
		for seen := 0; seen <= len(at); seen++ {
			if m.Parent == top {
				return true
			}
			up, ok := at[m.Parent]
			if !ok {
				return false
			}
			m = up
		}
		return false
	}
	seen := map[int]bool{}
	for _, m := range at {
		if m.FSType != "nsfs" || reachable(m) {
			continue
		}
		hidden++
		for {
			up, ok := at[m.Parent]
			if !ok {
				break
			}
			m = up
		}
		if !seen[m.Parent] {
			seen[m.Parent] = true
			bases = append(bases, m.Parent)
		}
	}
	return bases, hidden
}

// openLowerRunDir opens RunDir as seen in mount base (one that a cover on
// RunDir hides), O_PATH. It fails with a reason when base is not reachable
// that way: base itself covered at its own mount point, or a cover that is
// not a bind of the same directory.
func openLowerRunDir(mounts []mount, base int) (int, error) {
	var bm *mount
	for i := range mounts {
		if mounts[i].ID == base {
			bm = &mounts[i]
		}
	}
	if bm == nil {
		return -1, fmt.Errorf("mount %d is gone", base)
	}
	rel, err := filepath.Rel(bm.Point, RunDir)
	if err != nil || rel == "." || rel == ".." || len(rel) > 2 && rel[:3] == "../" {
		return -1, fmt.Errorf("mount %d (%s) is stacked on %s itself", base, bm.Point, RunDir)
	}
	// Not O_PATH: open_by_handle_at refuses such a mount descriptor (EBADF).
	bfd, err := unix.Open(bm.Point, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	defer unix.Close(bfd)
	if id, err := mountIDOf(bfd, ""); err != nil || id != base {
		return -1, fmt.Errorf("mount %d (%s) is itself covered", base, bm.Point)
	}
	h, _, err := unix.NameToHandleAt(unix.AT_FDCWD, RunDir, 0)
	if err != nil {
		return -1, fmt.Errorf("file handle of %s: %w", RunDir, err)
	}
	dfd, err := unix.OpenByHandleAt(bfd, h, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC)
	if err != nil {
		return -1, fmt.Errorf("open %s under its cover: %w", RunDir, err)
	}
	var want, got unix.Stat_t
	ok := unix.Stat(RunDir, &want) == nil && unix.Fstat(dfd, &got) == nil &&
		want.Dev == got.Dev && want.Ino == got.Ino
	if id, err := mountIDOf(dfd, ""); !ok || err != nil || id != base {
		unix.Close(dfd)
		return -1, fmt.Errorf("the mount covering %s is not a bind of the directory underneath", RunDir)
	}
	return dfd, nil
}

// eachHidden calls fn with an O_PATH descriptor of every hidden namespace
// mount at Path(name), topmost of each stack first, until fn returns
// done=true for the stack or the stack is empty. fn may unmount the mount.
func eachHidden(name string, fn func(fd int) (done bool, err error)) error {
	mounts, err := readMountinfo()
	if err != nil {
		return err
	}
	top, err := mountIDOf(unix.AT_FDCWD, RunDir)
	if err != nil {
		return err
	}
	var errs []error
	bases, _ := hiddenBases(mounts, top, name)
	for _, base := range bases {
		dfd, err := openLowerRunDir(mounts, base)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		errs = append(errs, eachStacked(dfd, base, name, fn))
		unix.Close(dfd)
	}
	return errors.Join(errs...)
}

// maxStack bounds the mounts handled on one path, against a loop on a
// kernel that does not behave as expected.
const maxStack = 64

// eachStacked calls fn for the topmost nsfs mount at name in dfd (RunDir in
// mount base) while there is one.
func eachStacked(dfd, base int, name string, fn func(fd int) (bool, error)) error {
	for range maxStack {
		fd, err := unix.Openat(dfd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("open hidden %s: %w", Path(name), err)
		}
		var fs unix.Statfs_t
		id, err := mountIDOf(fd, "")
		if err == nil {
			err = unix.Fstatfs(fd, &fs)
		}
		if err != nil || id == base || fs.Type != unix.NSFS_MAGIC {
			unix.Close(fd)
			return err
		}
		done, err := fn(fd)
		unix.Close(fd)
		if done || err != nil {
			return err
		}
	}
	return fmt.Errorf("%s: more than %d stacked mounts", Path(name), maxStack)
}

// detachHidden unmounts every hidden namespace mount at Path(name).
func detachHidden(name string) error {
	return eachHidden(name, func(fd int) (bool, error) {
		p := "/proc/self/fd/" + strconv.Itoa(fd)
		if err := unix.Unmount(p, unix.MNT_DETACH); err != nil {
			return true, fmt.Errorf("unmount hidden %s: %w", Path(name), err)
		}
		return false, nil
	})
}
