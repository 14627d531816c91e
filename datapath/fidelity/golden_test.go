package fidelity

import (
	"flag"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/cnibench/cnibench/datapath"
	"github.com/cnibench/cnibench/datapath/iptables"
	"github.com/cnibench/cnibench/datapath/nftables"
	"github.com/cnibench/cnibench/lab/labtest"
)

var update = flag.Bool("update", false, "reprogram the lab datapaths as root and rewrite testdata/lab-*")

// goldenServices are the Services of the golden dumps: one endpoint, four
// endpoints, and a UDP port with a port name.
func goldenServices() []datapath.Service {
	ep := func(s string, port uint16) datapath.Endpoint {
		return datapath.Endpoint{IP: netip.MustParseAddr(s), Port: port}
	}
	return []datapath.Service{
		{Namespace: "default", Name: "one", VIP: netip.MustParseAddr("198.18.130.20"), Port: 80, Protocol: datapath.TCP,
			Endpoints: []datapath.Endpoint{ep("198.19.1.10", 8080)}},
		{Namespace: "default", Name: "four", PortName: "http", VIP: netip.MustParseAddr("198.18.130.21"), Port: 8080, Protocol: datapath.TCP,
			Endpoints: []datapath.Endpoint{ep("198.19.0.10", 80), ep("198.19.0.11", 80), ep("198.19.1.10", 80), ep("198.19.1.11", 80)}},
		{Namespace: "scale", Name: "dns", PortName: "dns", VIP: netip.MustParseAddr("198.18.130.22"), Port: 53, Protocol: datapath.UDP,
			Endpoints: []datapath.Endpoint{ep("198.19.0.12", 5353), ep("198.19.1.12", 5353)}},
	}
}

// TestUpdateLabGoldens rewrites testdata/lab-iptables.save and
// testdata/lab-nftables.txt from the real lab datapaths (with -update).
func TestUpdateLabGoldens(t *testing.T) {
	if !*update {
		t.Skip("run with -update as root to rewrite the lab goldens")
	}
	spec := datapath.Spec{Services: goldenServices()}
	ns := labtest.ScratchNS(t, "fid")
	d, err := iptables.New(ns, iptables.Options{ClusterCIDR: "198.19.0.0/16"})
	ipt := labtest.OrSkip(t, d, err)
	labtest.Sync(t, ipt, spec, "iptables")
	writeGolden(t, "lab-iptables.save", nsRun(t, ns, "iptables-save"))
	ns = labtest.ScratchNS(t, "fid")
	d, err = nftables.New(ns, nftables.Options{ClusterCIDR: "198.19.0.0/16", ServiceCIDR: "198.18.128.0/17"})
	nft := labtest.OrSkip(t, d, err)
	labtest.Sync(t, nft, spec, "nftables")
	writeGolden(t, "lab-nftables.txt", nsRun(t, ns, "nft", "list", "table", "ip", "kube-proxy"))
}

func nsRun(t *testing.T, ns string, args ...string) []byte {
	t.Helper()
	out, err := exec.Command("nsenter", append([]string{"--net=" + ns}, args...)...).Output()
	if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return out
}

func writeGolden(t *testing.T, name string, b []byte) {
	t.Helper()
	if err := os.WriteFile(filepath.Join("testdata", name), b, 0o644); err != nil {
		t.Fatal(err)
	}
}
