package nodeprobe

import (
	"context"
	"errors"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/datapath"
	"github.com/cnibench/cnibench/datapath/iptables"
	"github.com/cnibench/cnibench/datapath/nftables"
	"github.com/cnibench/cnibench/internal/nsexec"
	"github.com/cnibench/cnibench/lab/labtest"
)

// kube-proxy's iptables mode (on iptables-nft) and nftables mode: the
// probe counts what the lab's writer of that layout programmed (rule and
// endpoint chains; service-ips elements and endpoint chains), step after
// step, and sees it go when the layout is removed.
func TestReadKubeProxy(t *testing.T) {
	for _, tc := range []struct {
		name, mode, ns string
		open           func(ns string) (datapath.Datapath, error)
		services, eps  int // the second step's layout
	}{
		{"iptables", KubeProxyIPTables, "npi", func(ns string) (datapath.Datapath, error) {
			return iptables.New(ns, iptables.Options{ClusterCIDR: "198.19.0.0/16"})
		}, 80, 3},
		{"nftables", KubeProxyNFTables, "npn", func(ns string) (datapath.Datapath, error) {
			return nftables.New(ns, nftables.Options{ClusterCIDR: "198.19.0.0/16", ServiceCIDR: datapath.ServiceCIDR.String()})
		}, 20, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := labtest.ScratchNS(t, tc.ns)
			d, err := tc.open(ns)
			d = labtest.OrSkip(t, d, err)
			program(t, d, scaleSpec(50, 3))
			checkCounts(t, read(t, ns, ""), tc.mode, 51, 152)
			program(t, d, scaleSpec(tc.services, tc.eps))
			rep := read(t, ns, "")
			checkCounts(t, rep, tc.mode, tc.services+1, tc.services*tc.eps+2)
			checkKeys(t, rep, scaleSpec(tc.services, tc.eps))
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
			checkCounts(t, read(t, ns, ""), "", 0, 0)
		})
	}
}

// A namespace with no datapath reads as none, and says what was looked
// for.
func TestReadNothing(t *testing.T) {
	ns := labtest.ScratchNS(t, "np0")
	rep := read(t, ns, "")
	checkCounts(t, rep, "", 0, 0)
	text := strings.Join(rep.Errors, "\n")
	for _, want := range []string{"table ip kube-proxy", "KUBE-SERVICES chain in table ip nat", "cilium_lb4_services_v2"} {
		if !strings.Contains(text, want) {
			t.Errorf("errors %q do not name %q", rep.Errors, want)
		}
	}
	if rep.BPFMapBytes != 0 || len(rep.Maps) != 0 {
		t.Errorf("no datapath but %d BPF map bytes, maps %+v", rep.BPFMapBytes, rep.Maps)
	}
}

// kube-proxy on iptables-legacy is not readable over nftables netlink:
// Read says so with errors.ErrUnsupported rather than report no Services.
func TestReadIPTablesLegacyUnsupported(t *testing.T) {
	ns := labtest.ScratchNS(t, "npl")
	d, err := iptables.New(ns, iptables.Options{Legacy: true})
	d = labtest.OrSkip(t, d, err)
	program(t, d, scaleSpec(5, 2))
	_, err = Read(context.Background(), Options{NetNS: ns, BPFFS: t.TempDir()})
	if !errors.Is(err, errors.ErrUnsupported) || !strings.Contains(err.Error(), "iptables-legacy") {
		t.Fatalf("Read on iptables-legacy: %v, want an unsupported error naming iptables-legacy", err)
	}
	t.Log(err)
}

// Endpoint keys, asked for some Services, follow an endpoint replaced
// (the counts stay the same): the new endpoint's key appears and the old
// one's goes, for both kube-proxy layouts. A stale chain of the old
// endpoint, as kube-proxy leaves one (nftables: flushed, deleted a second
// or more later; iptables above 1,000 endpoints: unreferenced, deleted
// once per sync period), is not a live endpoint.
func TestReadEndpointKeys(t *testing.T) {
	for _, mode := range []string{KubeProxyIPTables, KubeProxyNFTables} {
		t.Run(mode, func(t *testing.T) {
			ns := labtest.ScratchNS(t, "npe")
			var d datapath.Datapath
			var err error
			if mode == KubeProxyIPTables {
				d, err = iptables.New(ns, iptables.Options{ClusterCIDR: "198.19.0.0/16"})
			} else {
				d, err = nftables.New(ns, nftables.Options{ClusterCIDR: "198.19.0.0/16", ServiceCIDR: datapath.ServiceCIDR.String()})
			}
			d = labtest.OrSkip(t, d, err)
			defer d.Close()
			spec := scaleSpec(20, 4)
			program(t, d, spec)
			asked := []*datapath.Service{&spec.Services[3], &spec.Services[7]}
			names := []string{PortRef(servicePort(asked[0])), PortRef(servicePort(asked[1]))}
			rep := readEndpoints(t, ns, names)
			checkEndpointKeys(t, rep, asked, nil)

			old := asked[0].Endpoints[1]
			eps := append([]datapath.Endpoint(nil), asked[0].Endpoints...)
			eps[1] = datapath.Endpoint{IP: netip.MustParseAddr("198.18.250.9"), Port: old.Port}
			asked[0].Endpoints = eps
			program(t, d, spec)
			// kube-proxy's stale chain of the old endpoint.
			oldKey := EndpointKey(mode, servicePort(asked[0]), netip.AddrPortFrom(old.IP, old.Port))
			if mode == KubeProxyNFTables {
				stale := "endpoint-" + oldKey + "-" + asked[0].Namespace + "/" + asked[0].Name + "/tcp/" + asked[0].PortName + "__" + old.IP.String() + "/" + strconv.Itoa(int(old.Port))
				if _, err := nsexec.Run(t.Context(), ns, nil, "nft", "add", "chain", "ip", "kube-proxy", stale); err != nil {
					t.Fatal(err)
				}
			} else {
				// And a removed Service's KUBE-SVC chain, left for a sync
				// period: not a live Service.
				gone := Key(mode, ServicePort{Namespace: "scale", Name: "removed", PortName: "p", Protocol: "TCP"})
				if _, err := nsexec.Run(t.Context(), ns, nil, "iptables-nft", "-t", "nat", "-N", "KUBE-SVC-"+gone); err != nil {
					t.Fatal(err)
				}
				if slices.Contains(read(t, ns, "").Keys, gone) != true {
					t.Error("a read that is not live does not see the stale KUBE-SVC chain: the test does not test")
				}
				defer func() {
					if slices.Contains(rep.Keys, gone) {
						t.Errorf("a live read reports the removed Service's stale KUBE-SVC chain")
					}
				}()
				stale := "KUBE-SEP-" + oldKey
				if _, err := nsexec.Run(t.Context(), ns, nil, "iptables-nft", "-t", "nat", "-N", stale); err != nil {
					t.Fatal(err)
				}
				if _, err := nsexec.Run(t.Context(), ns, nil, "iptables-nft", "-t", "nat", "-A", stale, "-j", "DNAT", "-p", "tcp", "--to-destination", old.IP.String()+":"+strconv.Itoa(int(old.Port))); err != nil {
					t.Fatal(err)
				}
			}
			rep = readEndpoints(t, ns, names)
			checkEndpointKeys(t, rep, asked, []datapath.Endpoint{old})
			if rep.Services != 21 {
				t.Errorf("%d Services after the replacement, want 21", rep.Services)
			}
		})
	}
}

// readEndpoints reads ns asking for the endpoint keys of the Service
// ports names (PortRef).
func readEndpoints(t *testing.T, ns string, names []string) *Report {
	t.Helper()
	rep, err := Read(t.Context(), Options{Node: "node-t", NetNS: ns, BPFFS: t.TempDir(), Query: Query{EndpointsOf: names}})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.EndpointKeysRead {
		t.Fatalf("%s: endpoint keys not read (errors %q)", rep.Datapath, rep.Errors)
	}
	return rep
}

// checkEndpointKeys fails unless every endpoint of svcs has its key in
// rep and none of gone (endpoints of svcs[0] no longer there) has: the
// keys are exactly those of svcs.
func checkEndpointKeys(t *testing.T, rep *Report, svcs []*datapath.Service, gone []datapath.Endpoint) {
	t.Helper()
	have := map[string]bool{}
	for _, k := range rep.EndpointKeys {
		have[k] = true
	}
	n := 0
	for _, s := range svcs {
		for _, ep := range s.Endpoints {
			n++
			if k := EndpointKey(rep.Datapath, servicePort(s), netip.AddrPortFrom(ep.IP, ep.Port)); !have[k] {
				t.Errorf("%s: endpoint %s of %s (key %s) not among the %d endpoint keys", rep.Datapath, ep.IP, s.Name, k, len(have))
			}
		}
	}
	for _, ep := range gone {
		if k := EndpointKey(rep.Datapath, servicePort(svcs[0]), netip.AddrPortFrom(ep.IP, ep.Port)); have[k] {
			t.Errorf("%s: endpoint %s of %s is gone but its key %s is reported", rep.Datapath, ep.IP, svcs[0].Name, k)
		}
	}
	if len(have) != n {
		t.Errorf("%s: %d endpoint keys, want the %d of the Services asked for", rep.Datapath, len(have), n)
	}
}

func servicePort(s *datapath.Service) ServicePort {
	return ServicePort{Namespace: s.Namespace, Name: s.Name, PortName: s.PortName, Protocol: string(s.Protocol), ClusterIP: s.VIP, Port: s.Port}
}
