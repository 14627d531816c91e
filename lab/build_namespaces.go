package lab

import (
	"errors"
	"fmt"

	"github.com/cnibench/cnibench/internal/netnsx"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// openNamespace prepares namespace ns of kind for building, on a disposable
// thread inside it: sysctls, then a netlink socket bound to it and lo up.
// The returned nsCtx stays in b.open until b.done.
func (b *builder) openNamespace(ns string, kind string) (*nsCtx, error) {
	c := &nsCtx{name: ns, fd: netns.None()} // not 0: close would close stdin
	b.open[ns] = c
	fd, err := netns.GetFromPath(netnsx.Path(ns))
	if err != nil {
		return nil, fmt.Errorf("open netns %s: %w", ns, err)
	}
	c.fd = fd
	err = netnsx.Do(netnsx.Path(ns), func() error {
		if err := b.writeSysctls(kind); err != nil {
			return err
		}
		h, err := netlink.NewHandle(unix.NETLINK_ROUTE)
		if err != nil {
			return fmt.Errorf("netlink: %w", err)
		}
		c.h = h
		lo, err := h.LinkByName("lo")
		if err == nil {
			err = h.LinkSetUp(lo)
		}
		if err != nil {
			return fmt.Errorf("lo up: %w", err)
		}
		// Lets Down find processes left in it should its name be lost.
		return netnsx.TagLoopback(h, ns)
	})
	if err != nil {
		return nil, fmt.Errorf("netns %s: %w", ns, err)
	}
	return c, nil
}

// writeSysctls writes, in the calling thread's namespace, the base sysctls
// of kind and then (but in the underlay) Config.Sysctls in key order. It
// records each applied value of Config.Sysctls in Lab.Sysctls, or
// "unsupported" when the key is missing in any namespace.
func (b *builder) writeSysctls(kind string) error {
	l := b.l
	for _, s := range baseSysctls(kind) {
		err := netnsx.WriteSysctl(s.key, s.value)
		if err != nil && !(s.optional && errors.Is(err, netnsx.ErrNoSysctl)) {
			return err
		}
	}
	if kind == kindUnderlay {
		return nil
	}
	for _, k := range b.keys {
		v := l.Config.Sysctls[k]
		err := netnsx.WriteSysctl(k, v)
		switch {
		case errors.Is(err, netnsx.ErrNoSysctl):
			v = unsupportedSC
		case err != nil:
			return err
		}
		if _, seen := l.Sysctls[k]; !seen || v == unsupportedSC {
			l.Sysctls[k] = v
		}
	}
	return nil
}
