package ebpf

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"

	cebpf "github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/vishvananda/netlink"

	"github.com/cnibench/cnibench/internal/netnsx"
	"github.com/cnibench/cnibench/lab/labtest"
)

// TestEnforce, with tcx and with the netlink fallback: the server takes
// TCP and UDP from the client only, the client may only reach the server,
// and neither takes replies by rule. An allowed connection (and a UDP
// request) gets its answer back through conntrack; the third pod's SYN is
// dropped and counted; reprogramming swaps who is allowed; an entry
// deleted behind the enforcer's back fails Verify and Holds; Close leaves
// no program attached and frees every program and map.
func TestEnforce(t *testing.T) {
	p := newPolicyLab(t)
	labtest.Echo(t, p.server, echoPort)
	udpEcho(t, p.server, echoPort)
	srv := netip.AddrPortFrom(addr(p.server), echoPort)
	for _, how := range []string{attachTCX, attachNetlink} {
		t.Run(how, func(t *testing.T) {
			e := openT(t, p.site())
			e.how = how // the first hook attaches this way
			spec := p.spec(p.client)
			syncT(t, e, spec)
			if e.how != how {
				t.Fatalf("attached with %s, want %s", e.how, how)
			}
			mustPass(t, p.client, srv)
			mustDrop(t, e, p.third, srv)
			if err := udpExchange(p.client, srv, time.Second); err != nil {
				t.Errorf("UDP client -> server: %v, want the echo back through conntrack", err)
			}
			if err := udpExchange(p.third, srv, denyWithin); err == nil {
				t.Errorf("UDP third -> server got an answer, want it dropped")
			}
			if n, err := e.Allowed(t.Context()); err != nil || n < 2 {
				t.Errorf("allowed counter %d, %v: want the client's flow counted at both ends", n, err)
			}

			spec2 := p.spec(p.third) // now the third pod, not the client
			syncT(t, e, spec2)
			mustPass(t, p.third, srv)
			mustDrop(t, e, p.client, srv)

			// A policy entry deleted behind the enforcer's back.
			for _, r := range e.cur.rules {
				if err := e.maps.pol.Delete(r.keys[0]); err != nil {
					t.Fatal(err)
				}
				break
			}
			got, err := e.Verify(t.Context())
			if err == nil || !strings.Contains(err.Error(), "policy entry") {
				t.Errorf("Verify after a deletion: %v, want it to name the policy entry", err)
			}
			if got.Holds(e.Expected(spec2)) == nil {
				t.Errorf("counts %+v still hold %+v after a deletion", got, e.Expected(spec2))
			}
			syncT(t, e, spec2) // Program puts it back

			progs, maps := kernelIDs(t, e)
			if err := e.Close(); err != nil {
				t.Fatal(err)
			}
			if n := attached(t, p.site().Netns); n != 0 {
				t.Errorf("%d programs or filters left on pod veths after Close", n)
			}
			gone(t, progs, maps)
			if err := e.Close(); err != nil {
				t.Errorf("second Close: %v", err)
			}
			if _, err := e.Verify(t.Context()); !errors.Is(err, errClosed) {
				t.Errorf("Verify after Close: %v", err)
			}
		})
	}
}

// attached counts the tcx programs, cls_bpf filters and clsact qdiscs on
// every cnbp* link of the namespace.
func attached(t *testing.T, nsPath string) int {
	t.Helper()
	h, err := netnsx.NewHandle(nsPath)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	links, err := h.LinkList()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, l := range links {
		if !strings.HasPrefix(l.Attrs().Name, "cnbp") {
			continue
		}
		for _, hk := range []*hook{{ifindex: l.Attrs().Index, ingress: true}, {ifindex: l.Attrs().Index}} {
			err := netnsx.Do(nsPath, func() error {
				res, err := link.QueryPrograms(link.QueryOptions{Target: hk.ifindex, Attach: hk.attachType()})
				if err == nil {
					n += len(res.Programs)
				}
				return err
			})
			if err != nil && !errors.Is(err, cebpf.ErrNotSupported) {
				t.Fatal(err)
			}
			fs, err := h.FilterList(l, hk.parent())
			if err != nil {
				t.Fatal(err)
			}
			n += len(fs)
		}
		qs, _ := h.QdiscList(l)
		for _, q := range qs {
			if _, ok := q.(*netlink.GenericQdisc); ok && q.Type() == "clsact" {
				n++
			}
		}
	}
	return n
}
