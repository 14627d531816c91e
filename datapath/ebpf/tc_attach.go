package ebpf

import (
	"errors"
	"fmt"

	cebpf "github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/cnibench/cnibench/internal/netnsx"
)

// How ebpf-tc attaches to, takes over, switches and leaves pod veths.

// attachAll attaches both programs to every link: with tcx, or with
// netlink, or (auto) with tcx unless the kernel turns out not to have it.
// When adopting a pinned datapath, attachments left by the earlier process
// (pinned tcx links, our cls_bpf filters) are switched to the programs just
// loaded instead.
func (t *TCLB) attachAll(links []netlink.Link, how string, adopt bool) error {
	t.how = how
	if how == AttachAuto {
		t.how = AttachTCX
	}
	for _, l := range links {
		for _, ingress := range []bool{true, false} {
			a := &tcAttachment{iface: l.Attrs().Name, ifindex: l.Attrs().Index, ingress: ingress, prog: progToPod}
			if ingress {
				a.prog = progFromPod
			}
			p, err := t.objs.program(a.prog)
			if err != nil {
				return err
			}
			if adopt {
				ok, err := t.adopt(a, p)
				if err != nil {
					return err
				}
				if ok {
					t.attached = append(t.attached, a)
					continue
				}
			}
			if t.how == AttachTCX {
				err = t.attachTCX(a, p)
				if how == AttachAuto && len(t.attached) == 0 && errors.Is(err, ErrUnsupported) {
					t.how = AttachNetlink // kernel before 6.6
				}
			}
			if t.how == AttachNetlink {
				err = t.attachNetlink(a, p)
			}
			if err != nil {
				return err
			}
			t.attached = append(t.attached, a)
		}
	}
	return nil
}

// linkPin is where a's tcx link is pinned ("" without PinDir).
func (t *TCLB) linkPin(a *tcAttachment) string {
	dir := "egress"
	if a.ingress {
		dir = "ingress"
	}
	return t.pinPath(fmt.Sprintf("link_%s_%s", a.iface, dir))
}

// adopt takes over a's attachment left by an earlier process, switching it
// to p. It reports false when there is none.
func (t *TCLB) adopt(a *tcAttachment, p *cebpf.Program) (bool, error) {
	if l, err := link.LoadPinnedLink(t.linkPin(a), nil); err == nil {
		a.tcx = l
		t.how = AttachTCX
		if err := l.Update(p); err != nil {
			return true, fmt.Errorf("%s: take over %s: %w", NameTC, a, err)
		}
		return true, nil
	}
	l, err := t.h.LinkByIndex(a.ifindex)
	if err != nil {
		return false, fmt.Errorf("%s: %s: %w", NameTC, a, err)
	}
	fs, err := t.h.FilterList(l, a.parent())
	if err != nil {
		return false, nil // no clsact qdisc: nothing to adopt
	}
	for _, f := range fs {
		bf, ok := f.(*netlink.BpfFilter)
		if ok && bf.Priority == filterPrio && bf.Handle == filterPrio && bf.Name == a.prog {
			a.filter = t.filter(a, p)
			a.qdisc = a.ingress // delete the clsact with the ingress filter, if nothing else uses it
			t.how = AttachNetlink
			if err := t.h.FilterReplace(a.filter); err != nil {
				return true, fmt.Errorf("%s: take over %s: %w", NameTC, a, err)
			}
			return true, nil
		}
	}
	return false, nil
}

// parent is the clsact parent of a's hook.
func (a *tcAttachment) parent() uint32 {
	if a.ingress {
		return netlink.HANDLE_MIN_INGRESS
	}
	return netlink.HANDLE_MIN_EGRESS
}

// filter is our direct-action cls_bpf filter running p on a's hook.
func (t *TCLB) filter(a *tcAttachment, p *cebpf.Program) *netlink.BpfFilter {
	return &netlink.BpfFilter{
		FilterAttrs:  netlink.FilterAttrs{LinkIndex: a.ifindex, Parent: a.parent(), Handle: filterPrio, Priority: filterPrio, Protocol: unix.ETH_P_ALL},
		Fd:           p.FD(),
		Name:         a.prog,
		DirectAction: true,
	}
}

func (a *tcAttachment) String() string {
	dir := "egress"
	if a.ingress {
		dir = "ingress"
	}
	return fmt.Sprintf("%s on %s %s", a.prog, a.iface, dir)
}

// attachTCX creates a tcx link; ifindex is resolved in the node namespace,
// so the link is created from a thread inside it.
func (t *TCLB) attachTCX(a *tcAttachment, p *cebpf.Program) error {
	at := cebpf.AttachTCXEgress
	if a.ingress {
		at = cebpf.AttachTCXIngress
	}
	err := netnsx.Do(t.netns, func() error {
		var err error
		a.tcx, err = link.AttachTCX(link.TCXOptions{Interface: a.ifindex, Program: p, Attach: at})
		return err
	})
	if err != nil {
		return maybeUnsupported(fmt.Sprintf("%s: attach %s with tcx", NameTC, a), err)
	}
	if pin := t.linkPin(a); pin != "" {
		if err := a.tcx.Pin(pin); err != nil {
			return fmt.Errorf("%s: pin %s: %w", NameTC, a, err)
		}
	}
	return nil
}

// attachNetlink adds a clsact qdisc (unless there is one) and a
// direct-action cls_bpf filter, as tc(8) and Cilium before tcx do.
func (t *TCLB) attachNetlink(a *tcAttachment, p *cebpf.Program) error {
	l, err := t.h.LinkByIndex(a.ifindex)
	if err != nil {
		return fmt.Errorf("%s: attach %s: %w", NameTC, a, err)
	}
	qs, err := t.h.QdiscList(l)
	if err != nil {
		return fmt.Errorf("%s: attach %s: list qdiscs: %w", NameTC, a, err)
	}
	have := false
	for _, q := range qs {
		if q.Type() == "clsact" {
			have = true
		}
	}
	if !have {
		q := ClsactQdisc(a.ifindex)
		if err := t.h.QdiscAdd(q); err != nil {
			return fmt.Errorf("%s: attach %s: add clsact qdisc: %w", NameTC, a, err)
		}
		// The ingress attachment comes first on each link: it owns the qdisc.
		a.qdisc = true
	}
	a.filter = t.filter(a, p)
	if err := t.h.FilterAdd(a.filter); err != nil {
		return fmt.Errorf("%s: attach %s: add cls_bpf filter: %w", NameTC, a, err)
	}
	return nil
}

// swap points every attachment at next's programs: tcx link update or
// cls_bpf filter replace, atomic per hook.
func (t *TCLB) swap(next *objects) error {
	for _, a := range t.attached {
		p, err := next.program(a.prog)
		if err != nil {
			return err
		}
		if a.tcx != nil {
			err = a.tcx.Update(p)
		} else {
			f := *a.filter
			f.Fd = p.FD()
			if err = t.h.FilterReplace(&f); err == nil {
				a.filter = &f
			}
		}
		if err != nil {
			return fmt.Errorf("update %s: %w", a, err)
		}
	}
	return nil
}

// detach removes every attachment (and the clsact qdiscs we added, once
// no filter is left on them). Without unpin (Release), pinned tcx links
// and cls_bpf filters stay and only our handles are closed.
func (t *TCLB) detach(unpin bool) error {
	var errs []error
	// Reverse order: a link's egress filter goes before its qdisc.
	for i := len(t.attached) - 1; i >= 0; i-- {
		a := t.attached[i]
		if a.tcx != nil {
			if unpin {
				errs = append(errs, unpinFile(t.linkPin(a)))
			}
			if err := a.tcx.Close(); err != nil {
				errs = append(errs, fmt.Errorf("detach %s: %w", a, err))
			}
		}
		if !unpin {
			continue
		}
		if a.filter != nil {
			if err := t.h.FilterDel(a.filter); err != nil && !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.ENODEV) {
				errs = append(errs, fmt.Errorf("detach %s: %w", a, err))
			}
		}
		if a.qdisc && ClsactUnused(t.h, a.ifindex) {
			q := ClsactQdisc(a.ifindex)
			if err := t.h.QdiscDel(q); err != nil && !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.ENODEV) && !errors.Is(err, unix.EINVAL) {
				errs = append(errs, fmt.Errorf("detach %s: delete clsact: %w", a, err))
			}
		}
	}
	t.attached = nil
	return errors.Join(errs...)
}

// ClsactQdisc is the clsact qdisc of link ifindex, to add or delete.
// (flows attaches the same way.)
func ClsactQdisc(ifindex int) *netlink.GenericQdisc {
	return &netlink.GenericQdisc{QdiscAttrs: netlink.QdiscAttrs{LinkIndex: ifindex, Handle: netlink.MakeHandle(0xffff, 0), Parent: netlink.HANDLE_CLSACT}, QdiscType: "clsact"}
}

// ClsactUnused reports whether the clsact qdisc of a link (in h's
// namespace) has no filters left: someone else's filters keep it.
func ClsactUnused(h *netlink.Handle, ifindex int) bool {
	l, err := h.LinkByIndex(ifindex)
	if err != nil {
		return false
	}
	for _, parent := range []uint32{netlink.HANDLE_MIN_INGRESS, netlink.HANDLE_MIN_EGRESS} {
		if fs, err := h.FilterList(l, parent); err != nil || len(fs) > 0 {
			return false
		}
	}
	return true
}
