package netnsx

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// Named is what is found at one name under RunDir: a leftover may be a
// mounted namespace, a mount hidden under a cover of RunDir, or a file
// whose mount is gone.
type Named struct {
	Name    string
	Mounted bool // the path shows a namespace
	Hidden  int  // namespace mounts at the name hidden under a cover of RunDir
	IDs     []ID // the namespaces mounted there, shown or hidden
}

// State says in a few words what is at the name: "mounted" (any copy of
// the mount hidden underneath goes with it), a mount hidden under a cover
// of RunDir only, or a file whose mount is gone.
func (n Named) State() string {
	switch {
	case n.Mounted:
		return "mounted"
	case n.Hidden > 0:
		return fmt.Sprintf("mount hidden under a mount on %s", RunDir)
	default:
		return "file without a namespace mount"
	}
}

// InspectNamed describes every name under RunDir that starts with prefix.
func InspectNamed(prefix string) ([]Named, error) {
	names, err := ListNamed(prefix)
	if err != nil || len(names) == 0 {
		return nil, err
	}
	mounts, err := readMountinfo()
	if err != nil {
		return nil, err
	}
	top, err := mountIDOf(unix.AT_FDCWD, RunDir)
	if err != nil {
		return nil, err
	}
	out := make([]Named, 0, len(names))
	for _, name := range names {
		n := Named{Name: name}
		var fs unix.Statfs_t
		if unix.Statfs(Path(name), &fs) == nil && fs.Type == unix.NSFS_MAGIC {
			if id, err := IDOf(Path(name)); err == nil {
				n.Mounted = true
				n.IDs = append(n.IDs, id)
			}
		}
		if _, n.Hidden = hiddenBases(mounts, top, name); n.Hidden > 0 {
			// Best effort: a cover we cannot see under still counts as
			// hidden; DeleteNamed reports why it cannot reach it.
			eachHidden(name, func(fd int) (bool, error) {
				var st unix.Stat_t
				if unix.Fstat(fd, &st) == nil {
					n.IDs = append(n.IDs, ID{Dev: uint64(st.Dev), Ino: st.Ino})
				}
				return true, nil
			})
		}
		out = append(out, n)
	}
	return out, nil
}
