package flows

import (
	"testing"

	cebpf "github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/vishvananda/netlink"

	"github.com/cnibench/cnibench/datapath/ebpf"
	"github.com/cnibench/cnibench/internal/netnsx"
	"github.com/cnibench/cnibench/lab/labtest"
)

// TestCoexistWithServicePrograms: with datapath/ebpf's tc programs on the
// same veths, ours go after them (tcx tail, or a later cls_bpf priority),
// traffic still flows and is seen, and Close takes only ours away.
func TestCoexistWithServicePrograms(t *testing.T) {
	labtest.NeedRoot(t)
	r := newRig(t)
	for _, how := range []string{AttachTCX, AttachNetlink} {
		t.Run(how, func(t *testing.T) {
			lb, err := ebpf.NewTCLB(r.site.Netns, []string{"cnbp0"}, ebpf.Options{TCAttach: how})
			labtest.SkipIfUnsupported(t, err)
			if err != nil {
				t.Fatal(err)
			}
			defer lb.Close()
			rec := openOrSkip(t, r.site, EBPF, Options{TCAttach: how}, true)
			h, l := podVeth(t, r)
			before := hookChain(t, r.site.Netns, h, l, how)
			if len(before) != 2 || before[1] != progPrefix || before[0] == before[1] {
				t.Fatalf("cnbp0 ingress runs %v, want [the Service program, %s*] in that order", before, progPrefix)
			}
			const n = 10
			labtest.Connect(t, r.client, r.srv, n)
			c := waitCounts(t, rec, func(c Counts) bool { return c.ByKind[KindSYN] >= n })
			if c.ByKind[KindSYN] < n {
				t.Fatalf("%d connections beside the Service programs: %v", n, c.ByKind)
			}
			if err := rec.Close(); err != nil {
				t.Fatal(err)
			}
			after := hookChain(t, r.site.Netns, h, l, how)
			if len(after) != 1 || after[0] != before[0] {
				t.Fatalf("after Close cnbp0 ingress runs %v, want only %v", after, before[:1])
			}
		})
	}
}

// hookChain is cnbp0's ingress programs in run order, ours shortened to
// progPrefix: tcx's query order, or cls_bpf filters by priority.
func hookChain(t *testing.T, netns string, h *netlink.Handle, l netlink.Link, how string) []string {
	t.Helper()
	short := func(name string) string {
		if len(name) >= len(progPrefix) && name[:len(progPrefix)] == progPrefix {
			return progPrefix
		}
		return name
	}
	var out []string
	if how == AttachNetlink {
		fs, err := h.FilterList(l, netlink.HANDLE_MIN_INGRESS)
		if err != nil {
			t.Fatal(err)
		}
		prev := uint16(0)
		for _, f := range fs {
			if f.Attrs().Priority < prev {
				t.Fatalf("filters not listed by priority: %v", fs)
			}
			prev = f.Attrs().Priority
			if bf, ok := f.(*netlink.BpfFilter); ok {
				out = append(out, short(bf.Name))
			}
		}
		return out
	}
	var res *link.QueryResult
	err := netnsx.Do(netns, func() error {
		var err error
		res, err = link.QueryPrograms(link.QueryOptions{Target: l.Attrs().Index, Attach: cebpf.AttachTCXIngress})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, ap := range res.Programs {
		p, err := cebpf.NewProgramFromID(ap.ID)
		if err != nil {
			t.Fatal(err)
		}
		info, err := p.Info()
		p.Close()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, short(info.Name))
	}
	return out
}
