package netnsx

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// A namespace outlives its name when a process is still inside after the
// file's mount is gone (unmounted by another tool, or never reachable
// again). Nothing under RunDir leads to it then, so its owner marks it from
// the inside: the alias of its loopback device (`ip link` shows it), which
// lives exactly as long as the namespace and which no other tool sets.

// TagLoopback sets the alias of lo to tag, through h, a netlink handle in
// the namespace to mark.
func TagLoopback(h *netlink.Handle, tag string) error {
	lo, err := h.LinkByName("lo")
	if err == nil {
		err = h.LinkSetAlias(lo, tag)
	}
	if err != nil {
		return fmt.Errorf("tag lo %q: %w", tag, err)
	}
	return nil
}

// PidsTagged returns the pids (other than this process) in network
// namespaces whose loopback alias starts with prefix, keyed by alias. It
// skips this process's namespace and the namespaces in known (found by
// name already), and looks inside each other namespace once, read-only,
// from a disposable thread.
func PidsTagged(prefix string, known map[ID]string) (map[string][]int, error) {
	self, err := IDOf("/proc/self/ns/net")
	if err != nil {
		return nil, err
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	byNS := map[ID][]int{}
	var order []ID
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		id, err := IDOf("/proc/" + e.Name() + "/ns/net")
		if _, ok := known[id]; err != nil || ok || id == self {
			continue
		}
		if byNS[id] == nil {
			order = append(order, id)
		}
		byNS[id] = append(byNS[id], pid)
	}
	out := map[string][]int{}
	for _, id := range order {
		for _, pid := range byNS[id] {
			tag, err := loopbackTag(pid, id)
			if err != nil {
				continue // the process went away: try another of that namespace
			}
			if strings.HasPrefix(tag, prefix) {
				out[tag] = append(out[tag], byNS[id]...)
			}
			break
		}
	}
	return out, nil
}

// loopbackTag reads the alias of lo in the network namespace of pid, which
// must still be id.
func loopbackTag(pid int, id ID) (string, error) {
	var tag string
	err := Do(fmt.Sprintf("/proc/%d/ns/net", pid), func() error {
		if got, err := IDOf("/proc/thread-self/ns/net"); err != nil || got != id {
			return fmt.Errorf("pid %d changed namespace", pid)
		}
		h, err := netlink.NewHandle(unix.NETLINK_ROUTE)
		if err != nil {
			return err
		}
		defer h.Close()
		lo, err := h.LinkByName("lo")
		if err != nil {
			return err
		}
		tag = lo.Attrs().Alias
		return nil
	})
	return tag, err
}
