package labtarget

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/datapath"
	"github.com/cnibench/cnibench/datapath/ebpf"
	"github.com/cnibench/cnibench/internal/netnsx"
	"github.com/cnibench/cnibench/internal/nsexec"
	"github.com/cnibench/cnibench/lab/labtest"
)

// The sweep's datapath programs every node, as kube-proxy does: each
// node's kernel holds every Service (each node with its own xtables lock,
// in the lab's state dir), and a rule missing on the server's node alone
// fails Verify, naming that node.
func TestNodeDatapathsProgramEveryNode(t *testing.T) {
	l := labtest.NewLab(t, "cnbnd")
	dps, err := OpenDatapathsWith(l, "iptables-legacy", ebpf.Options{})
	if err != nil && strings.Contains(err.Error(), "unsupported") {
		t.Skipf("iptables-legacy unsupported here: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	g, err := labDatapath(l, dps)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close() })
	const n = 300
	spec := datapath.Spec{Services: datapath.DummyServices(n, 4)}
	labtest.Sync(t, g, spec, "300 Services on both nodes")

	for _, node := range l.Nodes {
		out, err := nsexec.Run(context.Background(), netnsx.Path(node.Netns), nil, "iptables-legacy-save", "-t", "nat")
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Count(string(out), "-A KUBE-SERVICES -d "); got != n {
			t.Errorf("%s: %d ClusterIP rules in KUBE-SERVICES, want %d", node.Name, got, n)
		}
		lock := filepath.Join(l.Config.StateDir, l.Config.Name, node.Name+".xtables.lock")
		if _, err := os.Stat(lock); err != nil {
			t.Errorf("%s: no xtables lock of its own: %v", node.Name, err)
		}
	}

	server := l.Nodes[1]
	if _, err := nsexec.Run(context.Background(), netnsx.Path(server.Netns), nil, "iptables-legacy", "-t", "nat", "-D", "KUBE-SERVICES", "1"); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Verify(context.Background()); err == nil || !strings.HasPrefix(err.Error(), server.Name+": ") {
		t.Fatalf("a rule deleted on %s: Verify says %v", server.Name, err)
	}
}
