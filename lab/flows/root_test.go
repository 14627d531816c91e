package flows

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"testing"
	"time"

	cebpf "github.com/cilium/ebpf"
	"github.com/mdlayher/netlink"
	vnl "github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/cnibench/cnibench/internal/netnsx"
	"github.com/cnibench/cnibench/lab"
	"github.com/cnibench/cnibench/lab/labtest"
)

// rig is a 2-node lab observed on node0: a client pod on node0, a TCP
// listener on node1's pod. Every flow crosses node0's pod veth and
// forward hook.
type rig struct {
	l              *lab.Lab
	site           Site
	client, server lab.Endpoint
	srv            netip.AddrPort
}

func newRig(t *testing.T) *rig {
	l := labtest.NewLab(t, "fl")
	r := &rig{l: l, client: labtest.Endpoint(t, l, "node0-pod0"), server: labtest.Endpoint(t, l, "node1-pod0")}
	r.site = Site{Netns: netnsx.Path(l.Nodes[0].Netns), Node: "node0", Prefix: l.Prefix}
	r.srv = netip.AddrPortFrom(netip.MustParseAddr(r.server.IP), 8080)
	labtest.Listeners(t, r.server, []uint16{8080})
	return r
}

// udp sends one datagram from the client pod to the server pod's port.
func (r *rig) udp(t *testing.T, port uint16) {
	t.Helper()
	err := netnsx.Do(r.client.NetnsPath(), func() error {
		c, err := net.Dial("udp4", netip.AddrPortFrom(r.srv.Addr(), port).String())
		if err != nil {
			return err
		}
		defer c.Close()
		_, err = c.Write([]byte("flow"))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// waitCounts polls until ok(counts) or 3 s pass.
func waitCounts(t *testing.T, rec *Recorder, ok func(Counts) bool) Counts {
	t.Helper()
	var c Counts
	for deadline := time.Now().Add(3 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		var err error
		if c, err = rec.Counts(); err != nil {
			t.Fatal(err)
		}
		if ok(c) || time.Now().After(deadline) {
			return c
		}
	}
}

func openOrSkip(t *testing.T, site Site, mech string, opts Options, start bool) *Recorder {
	t.Helper()
	rec, err := open(site, mech, nil, opts, start)
	labtest.SkipIfUnsupported(t, err)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rec.Close() })
	return rec
}

// TestToggle: on, N connections give at least N SYN events (one per flow
// at least) carrying the flows' 5-tuples, and a UDP flow gives one; off
// (Close), nothing of ours is left in the kernel and the traffic makes no
// event anywhere.
func TestToggle(t *testing.T) {
	labtest.NeedRoot(t)
	r := newRig(t)
	for _, c := range []struct {
		name, mech string
		opts       Options
	}{{"ebpf", EBPF, Options{}}, {"ebpf-cls_bpf", EBPF, Options{TCAttach: AttachNetlink}}, {"nflog", NFLOG, Options{}}} {
		mech := c.mech
		t.Run(c.name, func(t *testing.T) {
			rec := openOrSkip(t, r.site, mech, c.opts, true)
			if n, err := rec.Installed(); err != nil || n == 0 {
				t.Fatalf("installed: %d hooks/rules, %v", n, err)
			}
			const n = 20
			labtest.Connect(t, r.client, r.srv, n)
			c := waitCounts(t, rec, func(c Counts) bool { return c.ByKind[KindSYN] >= n && c.ByKind[KindFIN] >= n })
			t.Logf("%s: %d connections: %d events %v, lost %d", mech, n, c.Events, c.ByKind, c.Lost)
			if c.ByKind[KindSYN] < n || c.Events < n || c.Lost != 0 {
				t.Fatalf("%d connections: %d events (%v), lost %d; want >= %d SYN events, none lost", n, c.Events, c.ByKind, c.Lost, n)
			}
			checkSample(t, rec.Sample(-1), r)
			r.udp(t, 9999)
			c = waitCounts(t, rec, func(c Counts) bool { return c.ByKind[KindUDP] >= 1 })
			if c.ByKind[KindUDP] < 1 {
				t.Fatalf("a UDP flow: %v, want a %s event", c.ByKind, KindUDP)
			}
			checkUDP(t, rec.Sample(-1), r, 9999)
			// The read-back sees us while on (so its empty answer after
			// Close means something).
			if left, err := Leftovers(r.site, Options{}); err != nil || len(left) == 0 {
				t.Fatalf("while on, Leftovers found %v, %v", left, err)
			}
			var ids []string
			if s, ok := rec.src.(*ebpfSource); ok {
				ids = objectIDs(t, s)
			}
			if err := rec.Close(); err != nil {
				t.Fatal(err)
			}
			if err := rec.Close(); err != nil {
				t.Fatalf("second Close: %v", err)
			}
			checkOff(t, r, mech, ids)
			noClsact(t, r)
		})
	}
}

// checkSample: every TCP event is between the client and the server,
// SYNs from client to server:8080.
func checkSample(t *testing.T, evs []Event, r *rig) {
	t.Helper()
	cl := netip.MustParseAddr(r.client.IP)
	syn := 0
	for _, e := range evs {
		fwd := e.Src.Addr() == cl && e.Dst == r.srv
		rev := e.Dst.Addr() == cl && e.Src == r.srv
		if e.Proto != 6 || (!fwd && !rev) {
			t.Errorf("event %s is not of a client-server TCP flow", e)
		}
		if e.Kind() == KindSYN {
			syn++
			if !fwd {
				t.Errorf("SYN %s does not go client -> %s", e, r.srv)
			}
		}
	}
	if syn == 0 {
		t.Errorf("no SYN in the sample of %d events", len(evs))
	}
}

// checkUDP: the sample holds the UDP flow client -> server:port.
func checkUDP(t *testing.T, evs []Event, r *rig, port uint16) {
	t.Helper()
	want := netip.AddrPortFrom(r.srv.Addr(), port)
	for _, e := range evs {
		if e.Proto == 17 && e.Dst == want && e.Src.Addr() == netip.MustParseAddr(r.client.IP) {
			return
		}
	}
	t.Errorf("no UDP event to %s in the sample %v", want, evs)
}

// objectIDs names the recorder's programs and maps by kernel ID, to check
// after Close that the kernel freed them.
func objectIDs(t *testing.T, s *ebpfSource) []string {
	var out []string
	for _, p := range []*cebpf.Program{s.objs.CnbFlowsFromPod, s.objs.CnbFlowsToPod} {
		info, err := p.Info()
		if err != nil {
			t.Fatal(err)
		}
		id, _ := info.ID()
		out = append(out, fmt.Sprintf("prog %d", id))
	}
	for _, m := range []*cebpf.Map{s.objs.CnbFlowEvents, s.objs.CnbFlowLost, s.objs.CnbFlowUdp} {
		info, err := m.Info()
		if err != nil {
			t.Fatal(err)
		}
		id, _ := info.ID()
		out = append(out, fmt.Sprintf("map %d", id))
	}
	return out
}

// checkOff reads the kernel back after Close: no program, rule or bound
// group of ours; eBPF's programs and maps freed; and for NFLOG, a socket
// of the test's own bound to the group gets no message from new traffic.
func checkOff(t *testing.T, r *rig, mech string, ids []string) {
	t.Helper()
	left, err := Leftovers(r.site, Options{})
	if err != nil || len(left) > 0 {
		t.Fatalf("after Close: left %v, %v", left, err)
	}
	deadline := time.Now().Add(3 * time.Second)
	for _, id := range ids {
		for {
			var n int
			var err error
			if _, err = fmt.Sscanf(id, "prog %d", &n); err == nil {
				var p *cebpf.Program
				if p, err = cebpf.NewProgramFromID(cebpf.ProgramID(n)); err == nil {
					p.Close()
				}
			} else if _, err = fmt.Sscanf(id, "map %d", &n); err == nil {
				var m *cebpf.Map
				if m, err = cebpf.NewMapFromID(cebpf.MapID(n)); err == nil {
					m.Close()
				}
			}
			if errors.Is(err, unix.ENOENT) || errors.Is(err, os.ErrNotExist) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("after Close: %s still exists in the kernel (%v)", id, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	if mech == NFLOG {
		if got := nflogListen(t, r); got != 0 {
			t.Fatalf("after Close: %d NFLOG messages from new traffic, want 0", got)
		}
	}
}

// nflogListen binds the default group in node0 itself, makes 5
// connections and a UDP flow, and counts the messages that arrive.
func nflogListen(t *testing.T, r *rig) int {
	t.Helper()
	var c *netlink.Conn
	err := netnsx.Do(r.site.Netns, func() error {
		var err error
		c, err = netlink.Dial(unix.NETLINK_NETFILTER, nil)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, bind := range []bool{true, false} {
		m, err := bindMsg(defaultGroup, true)
		if !bind {
			m, err = modeMsg(defaultGroup, nflogSnaplen)
		}
		if err == nil {
			_, err = c.Execute(m)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	labtest.Connect(t, r.client, r.srv, 5)
	r.udp(t, 9998)
	got := 0
	c.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
	for {
		msgs, err := c.Receive()
		if err != nil {
			return got
		}
		got += len(msgs)
	}
}

// TestLostCounted: a ring (or socket buffer) that fills while nobody reads
// counts what it could not take as Lost, and the recorder goes on.
func TestLostCounted(t *testing.T) {
	labtest.NeedRoot(t)
	r := newRig(t)
	for _, mech := range []string{EBPF, NFLOG} {
		t.Run(mech, func(t *testing.T) {
			// One page of ring: 102 records of 40 bytes; the NFLOG
			// socket's buffer at its floor.
			rec := openOrSkip(t, r.site, mech, Options{RingBytes: uint32(unix.Getpagesize())}, false)
			labtest.Connect(t, r.client, r.srv, 150)
			rec.Start()
			// NFLOG learns of drops from the next message's sequence number.
			labtest.Connect(t, r.client, r.srv, 2)
			c := waitCounts(t, rec, func(c Counts) bool { return c.Lost > 0 && c.ByKind[KindSYN] > 0 })
			t.Logf("%s: 152 connections into a full buffer: %d events, lost %d", mech, c.Events, c.Lost)
			if c.Lost == 0 || c.Events == 0 {
				t.Fatalf("%d events, %d lost: want both > 0", c.Events, c.Lost)
			}
			// Nothing vanishes unaccounted: every connection of the burst
			// makes SYN and two FINs (and a SYN-ACK at the veth), read or lost.
			perConn := map[string]uint64{EBPF: 4, NFLOG: 3}[mech]
			if c.Events+c.Lost < perConn*150 {
				t.Fatalf("%d events + %d lost < %d x 150 connections", c.Events, c.Lost, perConn)
			}
			if err := rec.Err(); err != nil {
				t.Fatalf("consumer stopped: %v", err)
			}
		})
	}
}

// noClsact fails if node0's pod veth has a clsact qdisc: the lab makes
// none, so one left after Close is ours (the cls_bpf fallback's).
func noClsact(t *testing.T, r *rig) {
	t.Helper()
	h, l := podVeth(t, r)
	qs, err := h.QdiscList(l)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range qs {
		if q.Type() == "clsact" {
			t.Fatalf("after Close: cnbp0 still has a clsact qdisc")
		}
	}
}

// podVeth is node0's handle (closed at cleanup) and its pod veth cnbp0.
func podVeth(t *testing.T, r *rig) (*vnl.Handle, vnl.Link) {
	t.Helper()
	h, err := netnsx.NewHandle(r.site.Netns)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	l, err := h.LinkByName("cnbp0")
	if err != nil {
		t.Fatal(err)
	}
	return h, l
}
