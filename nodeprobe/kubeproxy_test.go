package nodeprobe

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/datapath"
	"github.com/cnibench/cnibench/datapath/iptables"
	"github.com/cnibench/cnibench/datapath/nftables"
	"github.com/cnibench/cnibench/internal/labtest"
)

// kube-proxy's iptables mode on iptables-nft: the probe counts what the
// lab's writer of kube-proxy's layout programmed, step after step, and
// sees it go when the layout is removed.
func TestReadKubeProxyIPTables(t *testing.T) {
	ns := labtest.ScratchNS(t, "npi")
	d, err := iptables.New(ns, iptables.Options{ClusterCIDR: "198.19.0.0/16"})
	d = labtest.OrSkip(t, d, err)
	program(t, d, scaleSpec(50, 3))
	checkCounts(t, read(t, ns, ""), KubeProxyIPTables, 51, 152)
	program(t, d, scaleSpec(80, 3))
	rep := read(t, ns, "")
	checkCounts(t, rep, KubeProxyIPTables, 81, 242)
	checkKeys(t, rep, scaleSpec(80, 3))
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	checkCounts(t, read(t, ns, ""), "", 0, 0)
}

// kube-proxy's nftables mode: service-ips elements and endpoint chains.
func TestReadKubeProxyNFTables(t *testing.T) {
	ns := labtest.ScratchNS(t, "npn")
	d, err := nftables.New(ns, nftables.Options{ClusterCIDR: "198.19.0.0/16", ServiceCIDR: datapath.ServiceCIDR.String()})
	d = labtest.OrSkip(t, d, err)
	program(t, d, scaleSpec(50, 3))
	checkCounts(t, read(t, ns, ""), KubeProxyNFTables, 51, 152)
	program(t, d, scaleSpec(20, 4))
	rep := read(t, ns, "")
	checkCounts(t, rep, KubeProxyNFTables, 21, 82)
	checkKeys(t, rep, scaleSpec(20, 4))
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	checkCounts(t, read(t, ns, ""), "", 0, 0)
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
