package lab

import (
	"context"

	"github.com/cnibench/cnibench/internal/netnsx"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// nsCtx is an open namespace during build.
type nsCtx struct {
	name string
	fd   netns.NsHandle
	h    *netlink.Handle
}

func (c *nsCtx) close() {
	if c.h != nil {
		c.h.Close()
	}
	if c.fd.IsOpen() {
		c.fd.Close()
	}
}

// builder is what build holds open while it turns the plan into live
// objects. Each layer is a method in its own file: build_namespaces.go
// (sysctls, lo), build_nodes.go (underlay bridge, uplinks), build_routes.go,
// build_vxlan.go and build_pods.go.
type builder struct {
	l      *Lab
	keys   []string          // Config.Sysctls keys, sorted: the order they are written in
	open   map[string]*nsCtx // namespaces with an open fd or handle, closed on return
	under  *nsCtx            // the underlay namespace
	bridge netlink.Link      // the underlay bridge cnbbr0
}

// done closes c and forgets it.
func (b *builder) done(c *nsCtx) {
	c.close()
	delete(b.open, c.name)
}

// build creates the namespaces, links, addresses and routes: every
// namespace first, then the underlay bridge, then node by node its uplink,
// its routes to the other nodes' pods and its pods. It stops at the first
// error; Up's cleanup (Down) removes what was made.
func (l *Lab) build(ctx context.Context) error {
	names := l.namespaces()
	if err := netnsx.CreateNamed(names, func(string) {}); err != nil {
		return err
	}
	b := &builder{l: l, keys: sortedKeys(l.Config.Sysctls), open: map[string]*nsCtx{}}
	defer func() {
		for _, c := range b.open {
			c.close()
		}
	}()
	if err := b.underlay(); err != nil {
		return err
	}
	for i := range l.Nodes {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := b.node(i); err != nil {
			return err
		}
	}
	if l.Config.Encryption == EncryptionWireGuard {
		return b.wireguard(ctx) // every node's keys known: peers can be configured
	}
	return nil
}
