package flows

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"

	cebpf "github.com/cilium/ebpf"
	"github.com/cilium/ebpf/ringbuf"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/cnibench/cnibench/datapath/ebpf"
	"github.com/cnibench/cnibench/internal/netnsx"
)

// ebpfSource is the EBPF mechanism: flows.c's two programs on every pod
// veth (from_pod at ingress, to_pod at egress), its ring buffer read with
// cilium/ebpf's ringbuf.Reader.
type ebpfSource struct {
	site     Site
	objs     flowsObjects
	hooks    []*hook
	h        *netlink.Handle
	rd       *ringbuf.Reader
	monoBase time.Time // wall time at CLOCK_MONOTONIC 0
}

// openEBPF loads the programs, attaches them (tcx, appended after any
// program already there; cls_bpf on kernels before 6.6) and opens the
// ring reader. On error nothing is left behind.
func openEBPF(site Site, ifaces []string, opts Options) (_ *ebpfSource, err error) {
	ring := opts.RingBytes
	if ring == 0 {
		ring = defaultRingBytes
	}
	if ring < uint32(unix.Getpagesize()) || ring&(ring-1) != 0 {
		return nil, fmt.Errorf("flows: RingBytes %d is not a power of two of at least a page", ring)
	}
	if err := probe(); err != nil {
		return nil, err
	}
	spec, err := loadFlows()
	if err != nil {
		return nil, err
	}
	spec.Maps[flowsMapCnbFlowEvents].MaxEntries = ring
	s := &ebpfSource{site: site, monoBase: monoBase()}
	if err := spec.LoadAndAssign(&s.objs, nil); err != nil {
		return nil, loadErr(err)
	}
	defer func() {
		if err != nil {
			s.remove()
		}
	}()
	if s.h, err = netnsx.NewHandle(site.Netns); err != nil {
		return nil, fmt.Errorf("flows: %s: %w", site.Node, err)
	}
	links, err := findLinks(s.h, ifaces)
	if err != nil {
		return nil, fmt.Errorf("flows: %s: %w", site.Node, err)
	}
	if err := s.attachAll(links, opts.TCAttach); err != nil {
		return nil, fmt.Errorf("flows: %s: %w", site.Node, err)
	}
	if s.rd, err = ringbuf.NewReader(s.objs.CnbFlowEvents); err != nil {
		return nil, fmt.Errorf("flows: ring reader: %w", err)
	}
	return s, nil
}

// monoBase is the wall time of CLOCK_MONOTONIC's zero, to date events
// stamped with bpf_ktime_get_ns.
func monoBase() time.Time {
	var ts unix.Timespec
	now := time.Now()
	if unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts) != nil {
		return now
	}
	return now.Add(-time.Duration(ts.Nano()))
}

// findLinks resolves ifaces in the node namespace, or lists every link
// named cnbp* (the lab's pod veths) when there are none.
func findLinks(h *netlink.Handle, ifaces []string) ([]netlink.Link, error) {
	if len(ifaces) == 0 {
		all, err := h.LinkList()
		if err != nil {
			return nil, fmt.Errorf("list links: %w", err)
		}
		var out []netlink.Link
		for _, l := range all {
			if strings.HasPrefix(l.Attrs().Name, podVethPrefix) {
				out = append(out, l)
			}
		}
		if len(out) == 0 {
			return nil, fmt.Errorf("no %s* links: no pod veths to observe", podVethPrefix)
		}
		return out, nil
	}
	out := make([]netlink.Link, 0, len(ifaces))
	for _, name := range ifaces {
		l, err := h.LinkByName(name)
		if err != nil {
			return nil, fmt.Errorf("link %s: %w", name, err)
		}
		out = append(out, l)
	}
	return out, nil
}

// podVethPrefix names the node side of the lab's pod veths.
const podVethPrefix = ebpf.PodVethPrefix

// drainEvery is how often the reader empties the ring without a wakeup
// (flows.c wakes it only when WAKEUP_BYTES are waiting): an event's
// longest wait, and how far Counts may lag the datapath.
const drainEvery = 20 * time.Millisecond

// run reads the ring until stop: woken by the kernel when it fills past
// WAKEUP_BYTES, or by its own deadline every drainEvery.
func (s *ebpfSource) run(emit func(Event), _ func(uint64)) error {
	mono := func(ns uint64) time.Time { return s.monoBase.Add(time.Duration(ns)) }
	var rec ringbuf.Record
	s.rd.SetDeadline(time.Now().Add(drainEvery))
	for {
		if err := s.rd.ReadInto(&rec); err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				s.rd.SetDeadline(time.Now().Add(drainEvery))
				continue
			}
			if errors.Is(err, ringbuf.ErrClosed) {
				return errStopped
			}
			return err
		}
		e, err := decodeRaw(rec.RawSample, mono)
		if err != nil {
			return err
		}
		emit(e)
	}
}

// kernelLost sums cnb_flow_lost over the CPUs.
func (s *ebpfSource) kernelLost() (uint64, error) {
	if s.objs.CnbFlowLost == nil {
		return 0, nil
	}
	per := make([]uint64, runtime.NumCPU())
	if err := s.objs.CnbFlowLost.Lookup(uint32(0), &per); err != nil {
		return 0, fmt.Errorf("flows: read lost count: %w", err)
	}
	var n uint64
	for _, v := range per {
		n += v
	}
	return n, nil
}

func (s *ebpfSource) stop() {
	if s.rd != nil {
		s.rd.Close()
	}
}

// remove detaches every hook and closes the programs and maps (nothing is
// pinned, so the kernel frees them with the last file descriptor).
func (s *ebpfSource) remove() error {
	var errs []error
	errs = append(errs, s.detachAll())
	if s.rd != nil {
		s.rd.Close()
	}
	errs = append(errs, s.objs.Close())
	s.objs = flowsObjects{}
	if s.h != nil {
		s.h.Close()
		s.h = nil
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("flows: remove from %s: %w", s.site.Node, err)
	}
	return nil
}

// loadErr words a failed load: a verifier log is our fault; no log with
// an unsupported answer is the kernel's.
func loadErr(err error) error {
	var ve *cebpf.VerifierError
	if errors.As(err, &ve) && len(ve.Log) > 0 {
		return fmt.Errorf("flows: load programs: %w", err)
	}
	if errors.Is(err, cebpf.ErrNotSupported) {
		return unsupported("BPF ring buffer / tc programs", err)
	}
	return fmt.Errorf("flows: load programs: %w", err)
}
