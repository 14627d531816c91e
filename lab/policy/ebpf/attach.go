package ebpf

import (
	"errors"
	"fmt"
	"slices"

	cebpf "github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/cnibench/cnibench/internal/netnsx"
)

// How the programs sit next to datapath/ebpf's "ebpf-tc" Service LB, which
// attaches to the same host veths: the policy must see the pods' real
// addresses, as Kubernetes policy is about endpoints, not ClusterIPs.
//   - from the pod (tc ingress): after the LB's DNAT;
//   - to the pod (tc egress): before the LB's reverse NAT of replies (a
//     reply is then matched in conntrack as pod -> pod).
// With tcx: at the tail, resp. the head. With cls_bpf (kernels before
// 6.6): priority 2 from the pod, after the LB's priority 1; to the pod,
// priority 1 beside the LB's filter (handle 1) in the same list, where a
// filter added later runs first. Neither keeps its place when the LB is
// attached after the policy, so every Program puts our programs back
// (fixOrder: the spare copy attached in place, then the old one removed),
// and Verify checks the places.

// Attach modes.
const (
	attachTCX     = "tcx"
	attachNetlink = "netlink"
	prioFromPod   = 2 // cls_bpf priority: after ebpf-tc's (1)
	prioToPod     = 1 // beside ebpf-tc's filter, ahead of it once added after it
	handleMain    = 2 // cls_bpf handles of the two copies (ebpf-tc's is 1)
	handleSpare   = 3
)

// pair is the two hooks of one host veth: [0] ingress (from the pod),
// [1] egress (to the pod).
type pair [2]*hook

// hook is one program on one direction of one interface.
type hook struct {
	iface   string
	ifindex int
	ingress bool
	tcx     link.Link
	filter  *netlink.BpfFilter
	qdisc   bool // we added the clsact qdisc
	spare   bool // runs the spare copy of the program (after a fixOrder)
}

func (h *hook) String() string {
	if h.ingress {
		return fmt.Sprintf("%s on %s ingress", progFromPod, h.iface)
	}
	return fmt.Sprintf("%s on %s egress", progToPod, h.iface)
}

func (h *hook) prog() string {
	if h.ingress {
		return progFromPod
	}
	return progToPod
}

func (h *hook) attachType() cebpf.AttachType {
	if h.ingress {
		return cebpf.AttachTCXIngress
	}
	return cebpf.AttachTCXEgress
}

func (h *hook) parent() uint32 {
	if h.ingress {
		return netlink.HANDLE_MIN_INGRESS
	}
	return netlink.HANDLE_MIN_EGRESS
}

// attach puts both programs on iface (once; again if the interface was
// recreated with another index).
func (e *Enforcer) attach(iface string, ifindex int) error {
	if p, ok := e.hooks[iface]; ok {
		if p[0] != nil && p[1] != nil && p[0].ifindex == ifindex {
			return nil
		}
		if err := e.detach(iface); err != nil {
			return err
		}
	}
	p := &pair{}
	e.hooks[iface] = p
	for i, ingress := range []bool{true, false} {
		h := &hook{iface: iface, ifindex: ifindex, ingress: ingress}
		if err := e.attachHook(h); err != nil {
			return err
		}
		p[i] = h
	}
	return nil
}

// attachHook uses tcx, or netlink when the kernel has no tcx (decided at
// the first hook).
func (e *Enforcer) attachHook(h *hook) error {
	p := e.program(h)
	if e.how == "" || e.how == attachTCX {
		err := e.attachTCX(h, p)
		if err == nil {
			e.how = attachTCX
			return nil
		}
		if e.how != "" || !errors.Is(err, cebpf.ErrNotSupported) {
			return fmt.Errorf("attach %s with tcx: %w", h, err)
		}
		e.how = attachNetlink // kernel before 6.6
	}
	return e.attachNetlink(h, p)
}

// attachTCX links p at the tail (from the pod) or head (to the pod) of
// the hook, from a thread inside the node namespace (ifindex is its).
func (e *Enforcer) attachTCX(h *hook, p *cebpf.Program) error {
	anchor := link.Head()
	if h.ingress {
		anchor = link.Tail()
	}
	return netnsx.Do(e.site.Netns, func() error {
		var err error
		h.tcx, err = link.AttachTCX(link.TCXOptions{Interface: h.ifindex, Program: p, Attach: h.attachType(), Anchor: anchor})
		return err
	})
}

// attachNetlink adds a clsact qdisc unless there is one, and a
// direct-action cls_bpf filter.
func (e *Enforcer) attachNetlink(h *hook, p *cebpf.Program) error {
	q := &netlink.GenericQdisc{QdiscAttrs: netlink.QdiscAttrs{LinkIndex: h.ifindex, Handle: netlink.MakeHandle(0xffff, 0), Parent: netlink.HANDLE_CLSACT}, QdiscType: "clsact"}
	switch err := e.h.QdiscAdd(q); {
	case err == nil:
		h.qdisc = true
	case !errors.Is(err, unix.EEXIST):
		return fmt.Errorf("attach %s: add clsact qdisc: %w", h, err)
	}
	prio, handle := uint16(prioToPod), uint32(handleMain)
	if h.ingress {
		prio = prioFromPod
	}
	if h.spare {
		handle = handleSpare
	}
	h.filter = &netlink.BpfFilter{
		FilterAttrs:  netlink.FilterAttrs{LinkIndex: h.ifindex, Parent: h.parent(), Handle: handle, Priority: prio, Protocol: unix.ETH_P_ALL},
		Fd:           p.FD(),
		Name:         h.prog(),
		DirectAction: true,
	}
	if err := e.h.FilterAdd(h.filter); err != nil {
		return fmt.Errorf("attach %s: add cls_bpf filter: %w", h, err)
	}
	return nil
}

// detach removes iface's hooks (and a clsact qdisc we added, once empty).
func (e *Enforcer) detach(iface string) error {
	p := e.hooks[iface]
	delete(e.hooks, iface)
	if p == nil {
		return nil
	}
	var errs []error
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] != nil {
			errs = append(errs, e.release(p[i]))
		}
	}
	return errors.Join(errs...)
}

// release removes h's link or filter (and a clsact qdisc we added, once
// nothing else uses it).
func (e *Enforcer) release(h *hook) error {
	var errs []error
	if h.tcx != nil {
		if err := h.tcx.Close(); err != nil {
			errs = append(errs, fmt.Errorf("detach %s: %w", h, err))
		}
	}
	if h.filter != nil {
		if err := e.h.FilterDel(h.filter); err != nil && !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.ENODEV) {
			errs = append(errs, fmt.Errorf("detach %s: %w", h, err))
		}
	}
	if h.qdisc && e.clsactUnused(h.ifindex) {
		q := &netlink.GenericQdisc{QdiscAttrs: netlink.QdiscAttrs{LinkIndex: h.ifindex, Handle: netlink.MakeHandle(0xffff, 0), Parent: netlink.HANDLE_CLSACT}, QdiscType: "clsact"}
		if err := e.h.QdiscDel(q); err != nil && !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.ENODEV) && !errors.Is(err, unix.EINVAL) {
			errs = append(errs, fmt.Errorf("detach %s: delete clsact: %w", h, err))
		}
	}
	return errors.Join(errs...)
}

// clsactUnused reports whether a link's clsact qdisc has no filter left.
func (e *Enforcer) clsactUnused(ifindex int) bool {
	l, err := e.h.LinkByIndex(ifindex)
	if err != nil {
		return false
	}
	for _, parent := range []uint32{netlink.HANDLE_MIN_INGRESS, netlink.HANDLE_MIN_EGRESS} {
		if fs, err := e.h.FilterList(l, parent); err != nil || len(fs) > 0 {
			return false
		}
	}
	return true
}

// progID is the kernel ID of the program h runs.
func (e *Enforcer) progID(h *hook) (cebpf.ProgramID, error) {
	info, err := e.program(h).Info()
	if err != nil {
		return 0, err
	}
	id, ok := info.ID()
	if !ok {
		return 0, fmt.Errorf("%s: kernel reports no program ID", h)
	}
	return id, nil
}

// chain lists the program IDs on h's hook, in the order they run: the
// tcx programs, or the cls_bpf filters by priority.
func (e *Enforcer) chain(h *hook) ([]cebpf.ProgramID, error) {
	var out []cebpf.ProgramID
	if h.tcx != nil {
		err := netnsx.Do(e.site.Netns, func() error {
			res, err := link.QueryPrograms(link.QueryOptions{Target: h.ifindex, Attach: h.attachType()})
			if err != nil {
				return err
			}
			for _, p := range res.Programs {
				out = append(out, p.ID)
			}
			return nil
		})
		return out, err
	}
	l, err := e.h.LinkByIndex(h.ifindex)
	if err != nil {
		return nil, err
	}
	fs, err := e.h.FilterList(l, h.parent())
	if err != nil {
		return nil, err
	}
	for _, f := range fs {
		if bf, ok := f.(*netlink.BpfFilter); ok {
			out = append(out, cebpf.ProgramID(bf.Id))
		}
	}
	return out, nil
}

// placed says whether h's program is on its hook and in its place: last
// from the pod, first to the pod.
func (e *Enforcer) placed(h *hook) (present, inPlace bool, err error) {
	id, err := e.progID(h)
	if err != nil {
		return false, false, err
	}
	ids, err := e.chain(h)
	if err != nil {
		return false, false, fmt.Errorf("query %s: %w", h, err)
	}
	i := slices.Index(ids, id)
	if i < 0 {
		return false, false, nil
	}
	if h.ingress {
		return true, i == len(ids)-1, nil
	}
	return true, i == 0, nil
}

// program is the copy of h's program that h runs.
func (e *Enforcer) program(h *hook) *cebpf.Program {
	if h.spare {
		return e.spare.Programs[h.prog()]
	}
	return e.coll.Programs[h.prog()]
}

// fixOrder moves our tcx programs back to their places when another
// program (an LB opened later) was appended behind them: the other copy of
// the program is attached in place first, then the old link closed, so the
// hook is never without policy (for a moment it runs both copies).
func (e *Enforcer) fixOrder() error {
	for _, p := range e.hooks {
		for _, h := range p {
			if h == nil {
				continue
			}
			present, ok, err := e.placed(h)
			if err != nil {
				return err
			}
			if ok {
				continue
			}
			old := *h
			h.spare = !h.spare
			if err := e.attachOne(h); err != nil {
				*h = old
				return fmt.Errorf("re-attach %s: %w", h, err)
			}
			if present {
				old.qdisc = false // h keeps the ownership of the clsact qdisc
				e.release(&old)
			}
		}
	}
	return nil
}

// attachOne attaches h's current copy the way the enforcer attaches.
func (e *Enforcer) attachOne(h *hook) error {
	if e.how == attachTCX {
		return e.attachTCX(h, e.program(h))
	}
	return e.attachNetlink(h, e.program(h))
}
