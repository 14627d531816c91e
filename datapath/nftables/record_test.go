package nftables

import (
	"context"
	"flag"
	"testing"

	"github.com/cnibench/cnibench/internal/nsexec"
	"github.com/cnibench/cnibench/lab/labtest"
)

var update = flag.Bool("update", false, "program the real datapath as root and rewrite testdata/*.json")

// foreignTables are another tool's (a host firewall's, kube-proxy's own
// IPv6 table) with objects named like ours: a listing of the whole
// ruleset holds them, and the parser must count only table ip kube-proxy.
const foreignTables = `table inet filter {
	map service-ips {
		type ipv4_addr . inet_proto . inet_service : verdict
		elements = { 198.18.128.99 . tcp . 80 : goto services }
	}
	chain input {
		type filter hook input priority filter; policy accept;
		ct state established,related accept
	}
	chain services {
		ip daddr 198.18.128.99 tcp dport 80 reject
	}
}
table ip6 kube-proxy {
	chain services {
		ip6 daddr fd00::1 drop
	}
}
`

// TestRecordListings rewrites testdata/ from the real nft (with -update, as
// root): GoldenSpec in each layout as Verify lists it, the whole ruleset
// of an empty namespace, nft's error for our absent table, and the whole
// ruleset holding the kube-proxy layout beside foreignTables.
func TestRecordListings(t *testing.T) {
	if !*update {
		t.Skip("run with -update as root to record testdata/")
	}
	ctx := context.Background()
	listTable := []string{"-j", "list", "table", "ip", table}
	for _, lay := range layouts {
		ns := labtest.ScratchNS(t, "nfg")
		nft := func(args ...string) []byte {
			out, err := nsexec.Run(ctx, ns, nil, "nft", args...)
			if err != nil {
				t.Fatal(err)
			}
			return out
		}
		if !lay.opts.Flat {
			labtest.WriteGolden(t, "empty.json", nft("-j", "list", "ruleset"))
			_, err := nsexec.Run(ctx, ns, nil, "nft", listTable...)
			if err == nil {
				t.Fatal("an empty namespace lists table ip kube-proxy")
			}
			labtest.WriteGolden(t, "absent.err", []byte(err.Error()))
		}
		d := newOrSkip(t, ns, lay.opts)
		labtest.Sync(t, d, labtest.GoldenSpec(), lay.name)
		labtest.WriteGolden(t, lay.name+".json", nft(listTable...))
		if lay.opts.Flat {
			continue
		}
		if _, err := nsexec.Run(ctx, ns, []byte(foreignTables), "nft", "-f", "-"); err != nil {
			t.Fatal(err)
		}
		labtest.WriteGolden(t, "foreign.json", nft("-j", "list", "ruleset"))
	}
}
