package haproxy

import (
	"bufio"
	"io"
	"net"
	"strings"
	"time"

	"github.com/cnibench/cnibench/internal/netnsx"
)

// ShowStat sends "show stat" on p's stats socket, dialled inside netns
// (abstract sockets are per namespace), and parses the answer.
func ShowStat[T any](netns string, p *Proc, parse func(io.Reader) (T, error)) (T, error) {
	var zero T
	var c net.Conn
	err := netnsx.Do(netns, func() (err error) {
		c, err = net.DialTimeout("unix", AbstractName(p.Stats), time.Second)
		return err
	})
	if err != nil {
		return zero, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Write([]byte("show stat\n")); err != nil {
		return zero, err
	}
	return parse(c)
}

// AbstractName is HAProxy's abns@name as Go dials it: HAProxy binds the
// name padded with NULs to the whole sun_path (108 bytes), and an
// abstract address must match to the last byte.
func AbstractName(name string) string {
	return "@" + name + strings.Repeat("\x00", 107-len(name))
}

// StatRows calls row for every data line of "show stat" CSV, with the
// column index of the last "# " header and the line's fields (at least
// two: proxy name and server name).
func StatRows(rd io.Reader, row func(cols map[string]int, f []string)) error {
	sc := bufio.NewScanner(rd)
	var cols map[string]int
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "# ") {
			cols = map[string]int{}
			for i, n := range strings.Split(strings.TrimPrefix(line, "# "), ",") {
				cols[n] = i
			}
			continue
		}
		if f := strings.Split(line, ","); cols != nil && len(f) >= 2 {
			row(cols, f)
		}
	}
	return sc.Err()
}
