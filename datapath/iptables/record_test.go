package iptables

import (
	"context"
	"flag"
	"testing"

	"github.com/cnibench/cnibench/internal/nsexec"
	"github.com/cnibench/cnibench/lab/labtest"
)

var update = flag.Bool("update", false, "program the real datapath as root and rewrite testdata/*.save")

// foreignRules are another tool's (a container runtime's, kubelet's) in
// the same tables: the parser must read them and every count and cleanup
// must leave them alone.
var foreignRules = [][]string{
	{"-t", "nat", "-N", "DOCKER"},
	{"-t", "nat", "-A", "PREROUTING", "-m", "addrtype", "--dst-type", "LOCAL", "-j", "DOCKER"},
	{"-t", "nat", "-A", "DOCKER", "-i", "docker0", "-j", "RETURN"},
	{"-t", "filter", "-N", "KUBE-FIREWALL"},
	{"-t", "filter", "-A", "INPUT", "-j", "KUBE-FIREWALL"},
	{"-t", "filter", "-A", "KUBE-FIREWALL", "!", "-s", "127.0.0.0/8", "-d", "127.0.0.0/8", "-m", "comment", "--comment", "block incoming localnet connections", "-j", "DROP"},
	{"-t", "filter", "-A", "FORWARD", "-s", "10.0.0.0/8", "-j", "ACCEPT"},
}

// TestRecordSaves rewrites testdata/*.save from the real tools (with
// -update, as root): GoldenSpec programmed by each backend, an empty
// namespace, GoldenSpec beside foreign rules, and those foreign rules
// alone after Close.
func TestRecordSaves(t *testing.T) {
	if !*update {
		t.Skip("run with -update as root to record testdata/*.save")
	}
	ctx := context.Background()
	for _, b := range backends {
		ns := labtest.ScratchNS(t, "ipg")
		save := func(name string) {
			out, err := nsexec.Run(ctx, ns, nil, b.tool+"-save")
			if err != nil {
				t.Fatal(err)
			}
			labtest.WriteGolden(t, name, out)
		}
		if b.name == NameNFT {
			save("empty.save")
		}
		d := newOrSkip(t, ns, b.opts)
		labtest.Sync(t, d, labtest.GoldenSpec(), b.name)
		save(b.name + ".save")
		if b.name != NameNFT {
			continue
		}
		for _, r := range foreignRules {
			edit(t, ns, b.tool, r...)
		}
		labtest.Sync(t, d, labtest.GoldenSpec(), "beside foreign rules")
		save("foreign.save")
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
		save("foreign-after-close.save")
	}
}
