package ebpf

import (
	"errors"
	"fmt"
	"os"

	cebpf "github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/features"
	"github.com/cilium/ebpf/link"

	"github.com/cnibench/cnibench/internal/bpfmap"
)

// SocketLB is the "ebpf" datapath: socket-level load balancing at
// connect()/sendmsg() for every process in one cgroup v2 subtree.
//
// TCP sockets keep the endpoint's address as their peer (getpeername
// shows the endpoint, as with Cilium); UDP sockets see the VIP in
// recvmsg() and getpeername().
type SocketLB struct {
	*core
	cgroup string
	links  []link.Link
}

// sockHooks are the programs of sock.c and where they attach.
var sockHooks = []struct {
	prog   string
	attach cebpf.AttachType
}{
	{"cnb_sock4_conn", cebpf.AttachCGroupInet4Connect},
	{"cnb_sock4_send", cebpf.AttachCGroupUDP4Sendmsg},
	{"cnb_sock4_recv", cebpf.AttachCGroupUDP4Recvmsg},
	{"cnb_sock4_peer", cebpf.AttachCgroupInet4GetPeername},
}

// NewSocketLB loads the socket LB with empty maps and attaches it to
// cgroupDir, a cgroup v2 directory (a lab's <cgroup2>/cnb-<lab>). It
// returns an error wrapping ErrUnsupported when the kernel lacks cgroup
// sock_addr programs or a helper they use.
func NewSocketLB(cgroupDir string, opts Options) (*SocketLB, error) {
	if err := probeSocket(); err != nil {
		return nil, err
	}
	if fi, err := os.Stat(cgroupDir); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("%s: cgroup %q is not a directory", NameSocket, cgroupDir)
	}
	s := &SocketLB{cgroup: cgroupDir}
	c, adopted, err := newCore(mode{
		name:         NameSocket,
		spec:         loadSock,
		flowMap:      mapRsk,
		flowWhat:     "UDP reverse-NAT map",
		entriesPer:   1,
		defaultFlows: DefaultSockFlowMapMax,
		countFlows:   bpfmap.Count[[16]byte, [8]byte],
		swap:         s.swap,
		detach:       s.detach,
	}, opts)
	if err != nil {
		return nil, err
	}
	s.core = c
	for _, h := range sockHooks {
		if err := s.attach(h.prog, h.attach, adopted); err != nil {
			s.Close()
			return nil, err
		}
	}
	return s, nil
}

// attach attaches one program to the cgroup, or, when adopting a pinned
// datapath, switches its pinned link to the program just loaded.
func (s *SocketLB) attach(prog string, at cebpf.AttachType, adopt bool) error {
	p, err := s.objs.program(prog)
	if err != nil {
		return err
	}
	pin := s.pinPath("link_" + prog)
	if adopt {
		if l, err := link.LoadPinnedLink(pin, nil); err == nil {
			s.links = append(s.links, l)
			if err := l.Update(p); err != nil {
				return fmt.Errorf("%s: take over pinned %s: %w", NameSocket, pin, err)
			}
			return nil
		}
	}
	l, err := link.AttachCgroup(link.CgroupOptions{Path: s.cgroup, Attach: at, Program: p})
	if err != nil {
		return maybeUnsupported(fmt.Sprintf("%s: attach %s to cgroup %s", NameSocket, prog, s.cgroup), err)
	}
	s.links = append(s.links, l)
	if pin != "" {
		if err := l.Pin(pin); err != nil {
			return fmt.Errorf("%s: pin %s: %w", NameSocket, prog, err)
		}
	}
	return nil
}

// probeSocket checks the kernel features the socket LB needs.
func probeSocket() error {
	if err := features.HaveProgramType(cebpf.CGroupSockAddr); err != nil {
		return unsupported("cgroup sock_addr programs", err)
	}
	for _, fn := range []asm.BuiltinFunc{asm.FnGetSocketCookie, asm.FnGetPrandomU32, asm.FnMapLookupElem} {
		if err := probeHelper(cebpf.CGroupSockAddr, fn, "cgroup sock_addr programs"); err != nil {
			return err
		}
	}
	if err := features.HaveMapType(cebpf.LRUHash); err != nil {
		return unsupported("LRU hash maps", err)
	}
	return nil
}

// Cgroup is the cgroup v2 directory the programs are attached to.
func (s *SocketLB) Cgroup() string { return s.cgroup }

// swap points every cgroup attachment at next's programs (link update:
// atomic per hook, no moment without a program).
func (s *SocketLB) swap(next *objects) error {
	for i, l := range s.links {
		p, err := next.program(sockHooks[i].prog)
		if err != nil {
			return err
		}
		if err := l.Update(p); err != nil {
			return fmt.Errorf("update %s: %w", sockHooks[i].prog, err)
		}
	}
	return nil
}

// detach removes every cgroup attachment; without unpin, pinned links
// stay attached and only our handles are closed.
func (s *SocketLB) detach(unpin bool) error {
	var errs []error
	for i, l := range s.links {
		if unpin {
			errs = append(errs, unpinFile(s.pinPath("link_"+sockHooks[i].prog)))
		}
		if err := l.Close(); err != nil {
			errs = append(errs, fmt.Errorf("detach %s from %s: %w", sockHooks[i].prog, s.cgroup, err))
		}
	}
	s.links = nil
	return errors.Join(errs...)
}

// Close detaches the programs, removes the pins and frees the maps:
// nothing is left behind. Idempotent.
func (s *SocketLB) Close() error {
	if s.core == nil {
		return s.detach(true)
	}
	return s.closeCore(false)
}

// Release closes this process's handles but leaves a pinned datapath
// (Options.PinDir) attached and programmed, for a later NewSocketLB with
// the same PinDir, or RemovePinned, to take over. Without PinDir it is
// Close.
func (s *SocketLB) Release() error {
	if s.core == nil {
		return s.detach(true)
	}
	return s.closeCore(true)
}
