package netnsx

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// mount is one line of /proc/self/mountinfo (proc(5)).
type mount struct {
	ID, Parent int
	Point      string // mount point, relative to this process's root
	Shared     bool   // member of a peer group ("shared:N")
	FSType     string
}

// readMountinfo parses /proc/self/mountinfo: it is the only place that
// shows mounts hidden under another mount.
func readMountinfo() ([]mount, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []mount
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		m, err := parseMountinfoLine(sc.Text())
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, sc.Err()
}

// parseMountinfoLine parses "36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw".
func parseMountinfoLine(line string) (mount, error) {
	f := strings.Fields(line)
	sep := -1
	for i := 6; i < len(f); i++ {
		if f[i] == "-" {
			sep = i
			break
		}
	}
	if len(f) < 7 || sep < 0 || sep+1 >= len(f) {
		return mount{}, fmt.Errorf("mountinfo: malformed line %q", line)
	}
	id, err1 := strconv.Atoi(f[0])
	parent, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil {
		return mount{}, fmt.Errorf("mountinfo: malformed line %q", line)
	}
	m := mount{ID: id, Parent: parent, Point: unescapeOctal(f[4]), FSType: f[sep+1]}
	for _, opt := range f[6:sep] {
		if strings.HasPrefix(opt, "shared:") {
			m.Shared = true
		}
	}
	return m, nil
}

// unescapeOctal undoes the kernel's \NNN escaping of space, tab, newline
// and backslash in mountinfo paths.
func unescapeOctal(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
