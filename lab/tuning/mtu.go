package tuning

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/vishvananda/netlink"

	"github.com/cnibench/cnibench/internal/netnsx"
)

// The MTUs mtu-N takes: IPv4's minimum a link must carry (576) up to a
// veth's and a bridge's largest (ETH_MAX_MTU).
const (
	minMTU = 576
	maxMTU = 65535
)

// mtu sets every lab link's MTU as a cluster with jumbo frames would
// have it: the underlay (bridge, its ports, the nodes' eth0) at N, the
// pods' links, the nodes' pod-facing ends and the VXLAN device at N less
// the overlay's overhead. Nothing but the lab's namespaces is touched; a
// real path allows it where its NICs and switches do, which the lab's
// veths and bridge always do.
type mtu struct{ bytes int }

func (m mtu) Name() string { return "mtu-" + strconv.Itoa(m.bytes) }
func (m mtu) About() string {
	return "every lab link at MTU N (pods, pod-facing ends and the VXLAN device at N less the overlay's 50 bytes), e.g. mtu-9000 for jumbo frames"
}
func (mtu) Applicable() error { return nil }
func (mtu) UnderlayToo() bool { return true }

// want is the MTU link should have in s: the underlay's links and a
// node's uplink carry whole underlay packets, the rest pods' packets.
func (m mtu) want(s Site, link netlink.Link) int {
	if s.Underlay || (s.Node && link.Attrs().Name == "eth0") {
		return m.bytes
	}
	return m.bytes - s.Overhead
}

// mtuLinks are s's links but lo, in the order their MTU can rise: the
// uplink before the VXLAN device on it, a bridge's ports before the
// bridge.
func mtuLinks(h *netlink.Handle) ([]netlink.Link, error) {
	ls, err := h.LinkList()
	if err != nil {
		return nil, fmt.Errorf("list links: %w", err)
	}
	rank := func(l netlink.Link) int {
		switch {
		case l.Attrs().Name == "eth0":
			return 0
		case l.Type() == "vxlan":
			return 2
		case l.Type() == "bridge":
			return 3
		}
		return 1
	}
	ls = slices.DeleteFunc(ls, func(l netlink.Link) bool { return l.Attrs().Name == "lo" })
	slices.SortStableFunc(ls, func(a, b netlink.Link) int {
		if d := rank(a) - rank(b); d != 0 {
			return d
		}
		return strings.Compare(a.Attrs().Name, b.Attrs().Name)
	})
	return ls, nil
}

func (m mtu) Apply(_ context.Context, s Site) (func() error, error) {
	h, err := netnsx.NewHandle(s.Netns)
	if err != nil {
		return nil, err
	}
	ls, err := mtuLinks(h)
	if err != nil {
		h.Close()
		return nil, err
	}
	var before, after []linkMTU
	for _, l := range ls {
		w := m.want(s, l)
		if w < minMTU {
			h.Close()
			return nil, fmt.Errorf("%w: %s would be %d with the overlay's %d bytes, under IPv4's %d", ErrNotApplicable, l.Attrs().Name, w, s.Overhead, minMTU)
		}
		before = append(before, linkMTU{l.Attrs().Name, l.Attrs().MTU})
		after = append(after, linkMTU{l.Attrs().Name, w})
	}
	undo := func() error {
		defer h.Close()
		if err := setMTUs(h, before); err != nil {
			return fmt.Errorf("%s: restore MTU: %w", s.Name, err)
		}
		return nil
	}
	return undo, setMTUs(h, after)
}

// linkMTU is a link's MTU, to set or as it was.
type linkMTU struct {
	name string
	mtu  int
}

// setMTUs gives each link its MTU. A device on top of another (VXLAN on
// eth0, a bridge on its ports) may not be larger than what is below it:
// links given in bottom-up order (mtuLinks) are lowered top-down first,
// then raised bottom-up, so either direction, and an undo, holds.
func setMTUs(h *netlink.Handle, ls []linkMTU) error {
	var errs []string
	set := func(l linkMTU, lower bool) {
		link, err := h.LinkByName(l.name)
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", l.name, err))
			return
		}
		if cur := link.Attrs().MTU; (lower && l.mtu < cur) || (!lower && l.mtu > cur) {
			if err := h.LinkSetMTU(link, l.mtu); err != nil {
				errs = append(errs, fmt.Sprintf("%s mtu %d: %v", l.name, l.mtu, err))
			}
		}
	}
	for _, l := range slices.Backward(ls) {
		set(l, true)
	}
	for _, l := range ls {
		set(l, false)
	}
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}

// Verify reads every link's MTU back: "mtu 9000" or "mtu 9000/8950"
// (underlay / pods) for a node under an overlay.
func (m mtu) Verify(_ context.Context, s Site) (string, error) {
	h, err := netnsx.NewHandle(s.Netns)
	if err != nil {
		return "", err
	}
	defer h.Close()
	ls, err := mtuLinks(h)
	if err != nil {
		return "", err
	}
	var got []int
	for _, l := range ls {
		if have, w := l.Attrs().MTU, m.want(s, l); have != w {
			return "", fmt.Errorf("%s: mtu %d, not %d", l.Attrs().Name, have, w)
		} else if !slices.Contains(got, have) {
			got = append(got, have)
		}
	}
	slices.Sort(got)
	slices.Reverse(got)
	var parts []string
	for _, g := range got {
		parts = append(parts, strconv.Itoa(g))
	}
	return "mtu " + strings.Join(parts, "/"), nil
}
