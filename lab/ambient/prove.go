package ambient

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/cnibench/cnibench/internal/netnsx"
	"github.com/cnibench/cnibench/lab"
)

// Pod is a lab pod as a proof needs it.
type Pod struct {
	Name  string `json:"name"`
	Node  string `json:"node"`
	Netns string `json:"netns"` // path
	IP    string `json:"ip"`
}

// LabPod is pod name ("node1-pod0") of l.
func LabPod(l *lab.Lab, name string) (Pod, error) {
	for _, n := range l.Nodes {
		for _, p := range n.Pods {
			if p.Name == name {
				return Pod{Name: p.Name, Node: n.Name, Netns: netnsx.Path(p.Netns), IP: p.IP}, nil
			}
		}
	}
	return Pod{}, fmt.Errorf("ambient: lab %q has no pod %q", l.Config.Name, name)
}

// Prove shows the mesh carries pod traffic between nodes in mutual TLS:
// a connection from pod from to a fresh listener in pod to (on another
// node) sends a random marker and gets it echoed, while a capture on
// to's node's uplink sees the segments towards to's address and port
// open with a TLS handshake record (0x16 0x03) and never the marker in
// clear, and the proxies' counters show the connection left from's node
// through a tunnel and arrived on to's node through its mTLS port. It
// returns the check line, or why the proof failed.
func (m *Mesh) Prove(ctx context.Context, from, to Pod) (string, error) {
	if from.Node == to.Node {
		return "", fmt.Errorf("ambient: proof needs pods on two nodes, got %s and %s on %s", from.Name, to.Name, to.Node)
	}
	dn, ok := m.Spec.node(to.Node)
	if !ok {
		return "", fmt.Errorf("ambient: node %q of %s is not in the mesh", to.Node, to.Name)
	}
	ln, err := listenIn(to)
	if err != nil {
		return "", err
	}
	defer ln.Close()
	dst := netip.MustParseAddrPort(ln.Addr().String())
	marker := newMarker()
	go echoOnce(ln)
	before, err := m.Counters()
	if err != nil {
		return "", err
	}
	cp, err := startCapture(dn.Netns, dn.Uplink, dst, marker)
	if err != nil {
		return "", err
	}
	echoErr := sendMarker(ctx, from, dst.String(), marker)
	seen := cp.done()
	after, err := m.Counters()
	if err != nil {
		return "", err
	}
	what := fmt.Sprintf("%s → %s %s", from.Name, to.Name, dst)
	d := func(node string, f func(Counters) uint64) uint64 { return f(after[node]) - f(before[node]) }
	out, tun, in := d(from.Node, func(c Counters) uint64 { return c.Outbound }), d(from.Node, func(c Counters) uint64 { return c.Tunnels }), d(to.Node, func(c Counters) uint64 { return c.Inbound })
	switch {
	case echoErr != nil:
		return "", fmt.Errorf("ambient: %s: the probe did not get through the mesh: %w", what, echoErr)
	case seen.Clear > 0:
		return "", fmt.Errorf("ambient: %s: the probe's payload crossed %s's %s in clear (%d frames): the mesh did not carry it", what, to.Node, dn.Uplink, seen.Clear)
	case seen.TLS == 0:
		return "", fmt.Errorf("ambient: %s: no TLS handshake among the %d segments towards the pod on %s's %s", what, seen.Segments, to.Node, dn.Uplink)
	case out == 0 || tun == 0 || in == 0:
		return "", fmt.Errorf("ambient: %s: the proxies did not count it (ztunnel-%s outbound +%d, tunnel +%d; ztunnel-%s inbound +%d)", what, from.Node, out, tun, to.Node, in)
	}
	return fmt.Sprintf("%s: echoed through the mesh; on %s's %s %d segments to the pod, %d opening a TLS handshake (0x16 0x03), the payload never in clear; ztunnel-%s outbound +%d (tunnel +%d), ztunnel-%s mTLS inbound +%d",
		what, to.Node, dn.Uplink, seen.Segments, seen.TLS, from.Node, out, tun, to.Node, in), nil
}

// newMarker is a random payload no other traffic carries.
func newMarker() []byte {
	b := make([]byte, 12)
	rand.Read(b)
	return []byte("cnb-ambient-probe-" + hex.EncodeToString(b))
}

// listenIn opens a TCP listener on an ephemeral port of p's address,
// inside p's namespace.
func listenIn(p Pod) (net.Listener, error) {
	var ln net.Listener
	err := netnsx.Do(p.Netns, func() (err error) {
		ln, err = net.Listen("tcp4", net.JoinHostPort(p.IP, "0"))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("ambient: listener in %s: %w", p.Name, err)
	}
	return ln, nil
}

// echoOnce echoes the first line of the first connection to ln.
func echoOnce(ln net.Listener) {
	c, err := ln.Accept()
	if err != nil {
		return
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	line, err := bufio.NewReader(c).ReadBytes('\n')
	if err == nil {
		c.Write(line)
	}
}

// sendMarker sends marker and a newline from pod p to addr and checks it
// comes back.
func sendMarker(ctx context.Context, p Pod, addr string, marker []byte) error {
	var c net.Conn
	err := netnsx.Do(p.Netns, func() (err error) {
		c, err = (&net.Dialer{Timeout: 3 * time.Second}).DialContext(ctx, "tcp4", addr)
		return err
	})
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(3 * time.Second))
	if _, err := c.Write(append(marker, '\n')); err != nil {
		return err
	}
	got, err := bufio.NewReader(c).ReadBytes('\n')
	if err != nil {
		return fmt.Errorf("no echo: %w", err)
	}
	if string(got[:len(got)-1]) != string(marker) {
		return fmt.Errorf("echo %q, want the marker", got)
	}
	return nil
}
