package flows

import (
	"errors"
	"fmt"

	cebpf "github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/cnibench/cnibench/datapath/ebpf"
	"github.com/cnibench/cnibench/internal/netnsx"
)

// How the EBPF mechanism attaches to the pod veths, beside the Service
// (datapath/ebpf) and policy programs already there: with tcx the link is
// appended at the tail of the hook's chain, so it runs after them and sees
// only what they let through; before tcx (kernel < 6.6) a cls_bpf filter
// at a priority after theirs does the same. Our programs return
// TC_ACT_UNSPEC / TCX_NEXT: the verdict stays with the others.

// filterPrio is our cls_bpf filters' priority and handle: high, so they
// run after datapath/ebpf's (priority 1) and any policy filter.
const filterPrio = 0xfff0

// hook is one attached program.
type hook struct {
	iface   string
	ifindex int
	ingress bool
	prog    string
	tcx     link.Link          // tcx link, or
	filter  *netlink.BpfFilter // cls_bpf filter,
	qdisc   bool               // and we added the link's clsact qdisc
}

func (a *hook) String() string {
	dir := "egress"
	if a.ingress {
		dir = "ingress"
	}
	return fmt.Sprintf("%s on %s %s", a.prog, a.iface, dir)
}

func (a *hook) parent() uint32 {
	if a.ingress {
		return netlink.HANDLE_MIN_INGRESS
	}
	return netlink.HANDLE_MIN_EGRESS
}

// attachAll attaches from_pod at ingress and to_pod at egress of every
// link: tcx, or cls_bpf (how is AttachNetlink, or AttachAuto and the
// kernel has no tcx).
func (s *ebpfSource) attachAll(links []netlink.Link, how string) error {
	useTCX := how != AttachNetlink
	for _, l := range links {
		for _, ingress := range []bool{true, false} {
			a := &hook{iface: l.Attrs().Name, ifindex: l.Attrs().Index, ingress: ingress, prog: flowsProgCnbFlowsToPod}
			p := s.objs.CnbFlowsToPod
			if ingress {
				a.prog, p = flowsProgCnbFlowsFromPod, s.objs.CnbFlowsFromPod
			}
			var err error
			if useTCX {
				err = s.attachTCX(a, p)
				if how == AttachAuto && len(s.hooks) == 0 && errors.Is(err, cebpf.ErrNotSupported) {
					useTCX = false // kernel before 6.6
				}
			}
			if !useTCX {
				err = s.attachFilter(a, p)
			}
			if err != nil {
				return err
			}
			s.hooks = append(s.hooks, a)
		}
	}
	return nil
}

// attachTCX appends a tcx link; the ifindex is the node namespace's, so
// the link is made from a thread inside it.
func (s *ebpfSource) attachTCX(a *hook, p *cebpf.Program) error {
	at := cebpf.AttachTCXEgress
	if a.ingress {
		at = cebpf.AttachTCXIngress
	}
	return netnsx.Do(s.site.Netns, func() error {
		l, err := link.AttachTCX(link.TCXOptions{Interface: a.ifindex, Program: p, Attach: at, Anchor: link.Tail()})
		if errors.Is(err, cebpf.ErrNotSupported) {
			return unsupported("tcx (kernel 6.6)", fmt.Errorf("attach %s: %w", a, err))
		}
		if err != nil {
			return fmt.Errorf("attach %s with tcx: %w", a, err)
		}
		a.tcx = l
		return nil
	})
}

// attachFilter adds a clsact qdisc (unless the link has one) and our
// direct-action cls_bpf filter.
func (s *ebpfSource) attachFilter(a *hook, p *cebpf.Program) error {
	l, err := s.h.LinkByIndex(a.ifindex)
	if err != nil {
		return fmt.Errorf("attach %s: %w", a, err)
	}
	qs, err := s.h.QdiscList(l)
	if err != nil {
		return fmt.Errorf("attach %s: list qdiscs: %w", a, err)
	}
	have := false
	for _, q := range qs {
		have = have || q.Type() == "clsact"
	}
	if !have {
		if err := s.h.QdiscAdd(ebpf.ClsactQdisc(a.ifindex)); err != nil {
			return fmt.Errorf("attach %s: add clsact qdisc: %w", a, err)
		}
		a.qdisc = true
	}
	a.filter = &netlink.BpfFilter{
		FilterAttrs:  netlink.FilterAttrs{LinkIndex: a.ifindex, Parent: a.parent(), Handle: filterPrio, Priority: filterPrio, Protocol: unix.ETH_P_ALL},
		Fd:           p.FD(),
		Name:         a.prog,
		DirectAction: true,
	}
	if err := s.h.FilterAdd(a.filter); err != nil {
		a.filter = nil
		return fmt.Errorf("attach %s: add cls_bpf filter: %w", a, err)
	}
	return nil
}

// detachAll removes every hook, in reverse order, and a clsact qdisc we
// added once no filter (ours or anyone's) is left on it. A link already
// gone (pod deleted) is not an error.
func (s *ebpfSource) detachAll() error {
	var errs []error
	gone := func(err error) bool {
		return err == nil || errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENODEV)
	}
	for i := len(s.hooks) - 1; i >= 0; i-- {
		a := s.hooks[i]
		if a.tcx != nil {
			if err := a.tcx.Close(); err != nil {
				errs = append(errs, fmt.Errorf("detach %s: %w", a, err))
			}
		}
		if a.filter != nil {
			if err := s.h.FilterDel(a.filter); !gone(err) {
				errs = append(errs, fmt.Errorf("detach %s: %w", a, err))
			}
		}
		if a.qdisc && ebpf.ClsactUnused(s.h, a.ifindex) {
			if err := s.h.QdiscDel(ebpf.ClsactQdisc(a.ifindex)); !gone(err) && !errors.Is(err, unix.EINVAL) {
				errs = append(errs, fmt.Errorf("detach %s: delete clsact: %w", a, err))
			}
		}
	}
	s.hooks = nil
	return errors.Join(errs...)
}
