package ebpf

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/datapath"
	lb "github.com/cnibench/cnibench/datapath/ebpf"
	"github.com/cnibench/cnibench/lab/labtest"
)

// TestServiceLBCoexists: with ebpf-tc's per-packet LB on the same veths,
// opened before or after the policy, a connection through the ClusterIP
// is allowed or denied by the endpoint it lands on, with tcx and with
// cls_bpf. Opened after, the LB takes a place the policy should have,
// which Verify reports and Program repairs.
func TestServiceLBCoexists(t *testing.T) {
	p := newPolicyLab(t)
	labtest.Echo(t, p.server, echoPort)
	vip := netip.MustParseAddrPort("198.18.128.10:80")
	svc := datapath.Spec{Services: []datapath.Service{{Namespace: "default", Name: "echo", PortName: "tcp", VIP: vip.Addr(), Port: vip.Port(),
		Protocol: datapath.TCP, Endpoints: []datapath.Endpoint{{IP: addr(p.server), Port: echoPort}}}}}
	for _, how := range []string{attachTCX, attachNetlink} {
		openLB := func(t *testing.T) {
			opts := lb.Options{TCAttach: lb.AttachTCX}
			if how == attachNetlink {
				opts.TCAttach = lb.AttachNetlink
			}
			d, err := lb.NewTCLB(p.site().Netns, nil, opts)
			d = labtest.OrSkip(t, d, err)
			labtest.Sync(t, d, svc, "service")
		}
		for _, lbFirst := range []bool{true, false} {
			name := how + "/policy first"
			if lbFirst {
				name = how + "/lb first"
			}
			t.Run(name, func(t *testing.T) {
				if lbFirst {
					openLB(t)
				}
				e := openT(t, p.site())
				e.how = how
				spec := p.spec(p.client)
				syncT(t, e, spec)
				if !lbFirst {
					openLB(t)
					if _, err := e.Verify(t.Context()); err == nil || !strings.Contains(err.Error(), "not in its place") {
						t.Fatalf("Verify with the LB attached after the policy: %v, want a misplaced hook", err)
					}
					syncT(t, e, spec) // puts the policy back in place
				}
				mustPass(t, p.client, vip)
				mustDrop(t, e, p.third, vip)
			})
		}
	}
}
