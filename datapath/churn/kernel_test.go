package churn

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/datapath"
	"github.com/cnibench/cnibench/datapath/fidelity"
	"github.com/cnibench/cnibench/datapath/iptables"
	"github.com/cnibench/cnibench/datapath/nftables"
	"github.com/cnibench/cnibench/internal/nsexec"
	"github.com/cnibench/cnibench/lab/labtest"
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
		}, []string{"iptables-nft-save"}},
		{"nftables", func(ns string) (datapath.Datapath, error) {
			return nftables.New(ns, nftables.Options{ClusterCIDR: "198.19.0.0/16", ServiceCIDR: datapath.ServiceCIDR.String()})
		}, []string{"nft", "list", "table", "ip", "kube-proxy"}},
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
				if msg := inKernel(out, c.name, change, spec, &added); msg != "" {
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

// destPat finds a DNAT target in a rule: iptables' "--to-destination
// ip:port", nft's "dnat to ip:port".
var destPat = regexp.MustCompile(`(?:--to-destination|dnat to) (\d+\.\d+\.\d+\.\d+:\d+)`)

// addedAndGone is inKernel's record of an added Service that a later
// change of the same sync removed again (a slow sync under load carries
// both): its remove has nothing to find in the kernel.
const addedAndGone = "(added and removed in one sync)"

// inKernel says what of change the dump lacks, "" when it holds it.
// added remembers the ClusterIP of the Service an Add created, which its
// Remove must take out.
func inKernel(out []byte, layout string, change Change, spec datapath.Spec, added *string) string {
	parse := fidelity.ParseIPTablesSave
	if layout == "nftables" {
		parse = fidelity.ParseNFT
	}
	d, err := parse(out)
	if err != nil {
		return "the dump does not parse: " + err.Error()
	}
	dump := string(out)
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
		case *added == addedAndGone:
			return "" // its add was held in the sync that removed it again
		case *added == "":
			return "it was never added"
		case vip(*added):
			return "its ClusterIP " + *added + " is still in the kernel"
		}
		return ""
	}
	if svc == nil {
		if change.Kind == Add {
			*added = addedAndGone // removed again by a later change the same sync carried
			return ""
		}
		return "the spec lacks it"
	}
	if !vip(svc.VIP.String()) {
		return "its ClusterIP " + svc.VIP.String() + " is not in the kernel"
	}
	if change.Kind == Add {
		*added = svc.VIP.String()
	}
	// What a packet to this Service meets must reach exactly its
	// endpoints: the new ones, none that left (other Services share
	// addresses, so the whole dump would not tell).
	walk, err := d.Walk(*svc)
	if err != nil {
		return err.Error()
	}
	got := map[string]bool{}
	for _, l := range walk {
		for _, m := range destPat.FindAllStringSubmatch(l, -1) {
			got[m[1]] = true
		}
	}
	want := map[string]bool{}
	for _, e := range svc.Endpoints {
		want[e.IP.String()+":"+strconv.Itoa(int(e.Port))] = true
	}
	if !maps.Equal(got, want) {
		return fmt.Sprintf("its chains DNAT to %v, want %v", slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)))
	}
	return ""
}
