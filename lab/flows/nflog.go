package flows

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"

	"github.com/cnibench/cnibench/internal/kfeature"
	"github.com/cnibench/cnibench/internal/netnsx"
	"github.com/cnibench/cnibench/internal/nsexec"
)

// nflogSource is the NFLOG mechanism: our nft table logging to a group,
// read from a NETLINK_NETFILTER socket opened in the node namespace
// (netlink sockets belong to the namespace they were made in).
type nflogSource struct {
	site    Site
	group   uint16
	conn    *netlink.Conn
	table   bool // our table is in place
	stopped atomic.Bool
}

func openNFLOG(site Site, ifaces []string, opts Options) (_ *nflogSource, err error) {
	s := &nflogSource{site: site, group: opts.Group}
	if s.group == 0 {
		s.group = defaultGroup
	}
	script, err := nflogRules(site.Prefix, s.group, ifaces)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			s.remove()
		}
	}()
	if err := s.bind(opts.RingBytes); err != nil {
		return nil, err
	}
	// Rules after the socket: no logged packet goes to an unbound group.
	if _, err := nsexec.Run(context.Background(), site.Netns, []byte(script), "nft", "-f", "-"); err != nil {
		return nil, kfeature.Check("nft log to an NFLOG group", fmt.Errorf("flows: %s: add table: %w", site.Node, err))
	}
	s.table = true
	return s, nil
}

// bind opens the socket in the node namespace, binds the group, asks for
// packet copies with sequence numbers, and sizes the receive buffer.
func (s *nflogSource) bind(rcvbuf uint32) error {
	err := netnsx.Do(s.site.Netns, func() error {
		var err error
		s.conn, err = netlink.Dial(unix.NETLINK_NETFILTER, nil)
		return err
	})
	if err != nil {
		return kfeature.Check("NETLINK_NETFILTER sockets", fmt.Errorf("flows: %s: %w", s.site.Node, err))
	}
	if rcvbuf == 0 {
		rcvbuf = defaultRingBytes
	}
	if err := setRcvbufForce(s.conn, int(rcvbuf)); err != nil {
		return fmt.Errorf("flows: %s: receive buffer: %w", s.site.Node, err)
	}
	for _, bind := range []bool{true, false} {
		var m netlink.Message
		if bind {
			m, err = bindMsg(s.group, true)
		} else {
			m, err = modeMsg(s.group, nflogSnaplen)
		}
		if err == nil {
			_, err = s.conn.Execute(m)
		}
		if errors.Is(err, unix.EBUSY) {
			return fmt.Errorf("flows: %s: NFLOG group %d is bound by another socket (Options.Group picks another)", s.site.Node, s.group)
		}
		if err != nil {
			return kfeature.Check("nfnetlink_log", fmt.Errorf("flows: %s: configure NFLOG group %d: %w", s.site.Node, s.group, err))
		}
	}
	return nil
}

// setRcvbufForce sets SO_RCVBUFFORCE (root may exceed rmem_max).
func setRcvbufForce(c *netlink.Conn, n int) error {
	rc, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	err = rc.Control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, n) })
	return errors.Join(err, serr)
}

// run reads packet messages until stop. Lost events show as gaps in the
// group's sequence numbers (the kernel numbers each message it builds,
// sent or not); an overrun socket also answers ENOBUFS, which only says
// "some were lost": the gap says how many.
func (s *nflogSource) run(emit func(Event), lost func(uint64)) error {
	var last uint32
	have := false
	for {
		msgs, err := s.conn.Receive()
		if s.stopped.Load() {
			return errStopped
		}
		if errors.Is(err, unix.ENOBUFS) {
			continue
		}
		if err != nil {
			return fmt.Errorf("NFLOG receive: %w", err)
		}
		now := time.Now()
		for _, m := range msgs {
			p, err := parsePacket(m, now)
			if errors.Is(err, errNotPacket) {
				continue
			}
			if err != nil {
				return err
			}
			if p.hasSeq {
				if have && p.seq != last+1 {
					lost(uint64(p.seq - last - 1))
				}
				last, have = p.seq, true
			}
			emit(p.Event)
		}
	}
}

func (s *nflogSource) kernelLost() (uint64, error) { return 0, nil }

func (s *nflogSource) stop() {
	s.stopped.Store(true)
	if s.conn != nil {
		s.conn.Close() // unblocks Receive; closing also unbinds the group
	}
}

// remove deletes our table and closes the socket (the kernel drops the
// group's instance with its socket).
func (s *nflogSource) remove() error {
	var errs []error
	if s.table {
		t := tableName(s.site.Prefix)
		_, err := nsexec.Run(context.Background(), s.site.Netns, nil, "nft", "delete", "table", "ip", t)
		if err != nil && !strings.Contains(err.Error(), "No such file or directory") {
			errs = append(errs, fmt.Errorf("delete table %s: %w", t, err))
		} else {
			s.table = false
		}
	}
	s.stop()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("flows: remove from %s: %w", s.site.Node, err)
	}
	return nil
}

// installed counts the log rules of our table, read back with nft.
func (s *nflogSource) installed() (int, error) {
	out, err := nsexec.Run(context.Background(), s.site.Netns, nil, "nft", "list", "table", "ip", tableName(s.site.Prefix))
	if err != nil {
		return 0, fmt.Errorf("flows: %s: %w", s.site.Node, err)
	}
	return strings.Count(string(out), fmt.Sprintf("log group %d", s.group)), nil
}

// nflogLeftovers lists our table and a bound instance of our group in
// the node namespace.
func nflogLeftovers(site Site, opts Options) ([]string, error) {
	var out []string
	tables, err := nsexec.Run(context.Background(), site.Netns, nil, "nft", "list", "tables")
	if errors.Is(err, exec.ErrNotFound) {
		tables, err = nil, nil // no nft binary: no table of ours either
	}
	if err != nil {
		return nil, err
	}
	t := tableName(site.Prefix)
	for _, line := range strings.Split(string(tables), "\n") {
		if strings.TrimSpace(line) == "table ip "+t {
			out = append(out, "nft table ip "+t)
		}
	}
	group := opts.Group
	if group == 0 {
		group = defaultGroup
	}
	groups, err := nflogGroups(site.Netns)
	if err != nil {
		return nil, err
	}
	for _, g := range groups {
		if g == group {
			out = append(out, fmt.Sprintf("NFLOG group %d bound", g))
		}
	}
	return out, nil
}

// nflogGroups reads the bound NFLOG groups of a namespace from
// /proc/net/netfilter/nfnetlink_log (read from a thread inside it; no
// file when nfnetlink_log is not loaded: none bound).
func nflogGroups(netns string) ([]uint16, error) {
	var out []uint16
	err := netnsx.Do(netns, func() error {
		f, err := os.Open("/proc/thread-self/net/netfilter/nfnetlink_log")
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		defer f.Close()
		out, err = parseGroups(f)
		return err
	})
	return out, err
}

// parseGroups reads the first column (group number) of nfnetlink_log's
// proc file.
func parseGroups(f io.Reader) ([]uint16, error) {
	var out []uint16
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) == 0 {
			continue
		}
		g, err := strconv.ParseUint(fs[0], 10, 16)
		if err != nil {
			return nil, fmt.Errorf("nfnetlink_log: bad line %q", sc.Text())
		}
		out = append(out, uint16(g))
	}
	return out, sc.Err()
}
