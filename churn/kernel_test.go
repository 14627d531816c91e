package churn

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/datapath"
	"github.com/cnibench/cnibench/datapath/iptables"
	"github.com/cnibench/cnibench/datapath/nftables"
	"github.com/cnibench/cnibench/internal/labtest"
	"github.com/cnibench/cnibench/internal/nsexec"
)

// On the real kernel, with kube-proxy's partial syncs: every change
// reported held is in the kernel when it is reported (read back here with
// the tools, apart from the datapath's own Verify): a scaled or replaced
// Service DNATs to each of its endpoints, an added Service is dispatched,
// a removed one is gone.
func TestChangesAreInTheKernelWhenHeld(t *testing.T) {
	for _, c := range []struct {
		name string
		open func(ns string) (datapath.Datapath, error)
		dump []string
	}{
		{"iptables", func(ns string) (datapath.Datapath, error) {
			return iptables.New(ns, iptables.Options{ClusterCIDR: "198.19.0.0/16"})
		}, []string{"iptables-nft-save", "-t", "nat"}},
		{"nftables", func(ns string) (datapath.Datapath, error) {
			return nftables.New(ns, nftables.Options{ClusterCIDR: "198.19.0.0/16", ServiceCIDR: datapath.ServiceCIDR.String()})
		}, []string{"nft", "list", "ruleset"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ns := labtest.ScratchNS(t, "chn")
			dp, err := c.open(ns)
			if errors.Is(err, datapath.ErrUnsupported) {
				t.Skipf("skipping: %v", err)
			}
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { dp.Close() })
			ch := newChurner(t, dp, Options{Services: 100, Endpoints: 4, Rate: 20, MinSync: dur(200 * time.Millisecond)})
			checked, added := 0, ""
			ch.OnHeld = func(change Change, spec datapath.Spec) {
				out, err := nsexec.Run(context.Background(), ns, nil, c.dump[0], c.dump[1:]...)
				if err != nil {
					t.Errorf("%s: %v", c.dump[0], err)
					return
				}
				if msg := inKernel(string(out), change, spec, &added); msg != "" {
					t.Errorf("change %d (%s of %s) reported held, but %s", change.Seq, change.Kind, change.Service, msg)
				}
				checked++
			}
			ch.Start(context.Background())
			time.Sleep(1500 * time.Millisecond)
			r := ch.Stop()
			if r.Failures > 0 || r.Held != r.Made || checked != r.Held || r.Held < 20 {
				t.Fatalf("made %d, held %d, checked %d, failures %d (%s)", r.Made, r.Held, checked, r.Failures, r.FirstError)
			}
			if !r.Partial {
				t.Error("partial syncs off")
			}
			t.Logf("%d changes in %s, %d syncs, latency p50 %.0fms p99 %.0fms, sync CPU %s per change",
				r.Made, r.Elapsed.Round(time.Millisecond), r.Syncs, r.P50Ms, r.P99Ms, r.SyncCPUPerChange)
		})
	}
}

// inKernel says what of change the dump lacks, "" when it holds it.
// added remembers the ClusterIP of the Service an Add created, which its
// Remove must take out.
func inKernel(dump string, change Change, spec datapath.Spec, added *string) string {
	var svc *datapath.Service
	for i := range spec.Services {
		if spec.Services[i].Key() == change.Service {
			svc = &spec.Services[i]
		}
	}
	vip := func(s string) bool {
		return strings.Contains(dump, s+" ") || strings.Contains(dump, s+"/32 ")
	}
	if change.Kind == Remove {
		switch {
		case svc != nil:
			return "" // added again by a later change the same sync carried
		case *added == "":
			return "it was never added"
		case vip(*added):
			return "its ClusterIP " + *added + " is still in the kernel"
		}
		return ""
	}
	if svc == nil {
		if change.Kind == Add {
			return "" // removed again by a later change the same sync carried
		}
		return "the spec lacks it"
	}
	if !vip(svc.VIP.String()) {
		return "its ClusterIP " + svc.VIP.String() + " is not in the kernel"
	}
	if change.Kind == Add {
		*added = svc.VIP.String()
	}
	for _, e := range svc.Endpoints {
		if !strings.Contains(dump, e.IP.String()+":"+strconv.Itoa(int(e.Port))) {
			return "endpoint " + e.IP.String() + ":" + strconv.Itoa(int(e.Port)) + " is not in the kernel"
		}
	}
	return ""
}
