package ebpf

import (
	"fmt"
	"strings"

	cebpf "github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/features"
	"github.com/cilium/ebpf/link"
	"github.com/vishvananda/netlink"

	"github.com/cnibench/cnibench/internal/bpfmap"
	"github.com/cnibench/cnibench/internal/netnsx"
)

// TCLB is the "ebpf-tc" datapath: per-packet Service DNAT with a BPF
// conntrack, on the node side of pod veths in one node namespace.
type TCLB struct {
	*core
	netns    string
	h        *netlink.Handle // netlink socket inside netns
	how      string          // AttachTCX or AttachNetlink, once attached
	attached []*tcAttachment
}

// tcAttachment is one program on one hook of one interface.
type tcAttachment struct {
	iface   string
	ifindex int
	ingress bool
	prog    string
	tcx     link.Link          // AttachTCX
	filter  *netlink.BpfFilter // AttachNetlink
	qdisc   bool               // we created the clsact qdisc (delete it on detach)
}

// Programs of tc.c: from the pod (the veth's ingress on the node side) and
// to the pod (its egress).
const (
	progFromPod = "cnb_tc_from_pod"
	progToPod   = "cnb_tc_to_pod"
	// PodVethPrefix names the node side of the lab's pod veths.
	PodVethPrefix = "cnbp"
	// filterPrio is the priority (and handle) of our cls_bpf filters.
	filterPrio = 1
)

// NewTCLB loads the per-packet LB with empty maps and attaches it to
// ifaces (both directions) in the network namespace at netnsPath (e.g.
// /run/netns/cnb-x-node0). With no ifaces it attaches to every link named
// cnbp* there, i.e. every pod veth of a lab node. It returns an error
// wrapping ErrUnsupported when the kernel lacks what it needs.
func NewTCLB(netnsPath string, ifaces []string, opts Options) (*TCLB, error) {
	if err := probeTC(); err != nil {
		return nil, err
	}
	h, err := netnsx.NewHandle(netnsPath)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", NameTC, err)
	}
	t := &TCLB{netns: netnsPath, h: h}
	links, err := t.findLinks(ifaces)
	if err != nil {
		h.Close()
		return nil, err
	}
	c, adopted, err := newCore(mode{
		name:         NameTC,
		spec:         loadTc,
		flowMap:      mapCT,
		flowWhat:     "conntrack map",
		entriesPer:   2,
		defaultFlows: DefaultFlowMapMax,
		countFlows:   bpfmap.Count[[16]byte, [12]byte],
		swap:         t.swap,
		detach:       t.detach,
	}, opts)
	if err != nil {
		h.Close()
		return nil, err
	}
	t.core = c
	if err := t.attachAll(links, c.opts.TCAttach, adopted); err != nil {
		t.Close()
		return nil, err
	}
	return t, nil
}

// probeTC checks the kernel features the per-packet LB needs.
func probeTC() error {
	if err := features.HaveProgramType(cebpf.SchedCLS); err != nil {
		return unsupported("tc (sched_cls) programs", err)
	}
	for _, fn := range []asm.BuiltinFunc{asm.FnSkbLoadBytes, asm.FnSkbStoreBytes, asm.FnL3CsumReplace, asm.FnL4CsumReplace, asm.FnGetPrandomU32} {
		if err := probeHelper(cebpf.SchedCLS, fn, "tc programs"); err != nil {
			return err
		}
	}
	if err := features.HaveMapType(cebpf.LRUHash); err != nil {
		return unsupported("LRU hash maps", err)
	}
	return nil
}

// findLinks resolves ifaces (or every cnbp* link) in the namespace.
func (t *TCLB) findLinks(ifaces []string) ([]netlink.Link, error) {
	var out []netlink.Link
	if len(ifaces) == 0 {
		all, err := t.h.LinkList()
		if err != nil {
			return nil, fmt.Errorf("%s: list links in %s: %w", NameTC, t.netns, err)
		}
		for _, l := range all {
			if strings.HasPrefix(l.Attrs().Name, PodVethPrefix) {
				out = append(out, l)
			}
		}
		if len(out) == 0 {
			return nil, fmt.Errorf("%s: no %s* interface in %s", NameTC, PodVethPrefix, t.netns)
		}
		return out, nil
	}
	for _, name := range ifaces {
		l, err := t.h.LinkByName(name)
		if err != nil {
			return nil, fmt.Errorf("%s: interface %s in %s: %w", NameTC, name, t.netns, err)
		}
		out = append(out, l)
	}
	return out, nil
}

// Netns is the namespace the programs are attached in.
func (t *TCLB) Netns() string { return t.netns }

// AttachMode is how the programs are attached: AttachTCX or AttachNetlink.
func (t *TCLB) AttachMode() string { return t.how }

// Interfaces lists the interfaces the programs are attached to.
func (t *TCLB) Interfaces() []string {
	var out []string
	for _, a := range t.attached {
		if a.ingress {
			out = append(out, a.iface)
		}
	}
	return out
}

// Close detaches the programs, removes the clsact qdiscs it added, the
// pins, and frees the maps (conntrack included). Idempotent.
func (t *TCLB) Close() error { return t.close(false) }

// Release closes this process's handles but leaves a pinned datapath
// (Options.PinDir) attached and programmed, for a later NewTCLB with the
// same PinDir, or RemovePinned and the namespace's deletion, to take over.
// Without PinDir it is Close.
func (t *TCLB) Release() error { return t.close(true) }

func (t *TCLB) close(keep bool) error {
	var err error
	if t.core == nil {
		err = t.detach(true)
	} else {
		err = t.closeCore(keep)
	}
	if t.h != nil {
		t.h.Close()
		t.h = nil
	}
	return err
}
