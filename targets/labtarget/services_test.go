package labtarget

import (
	"fmt"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/datapath"
	"github.com/cnibench/cnibench/lab"
	"github.com/cnibench/cnibench/suite"
)

// fakeLab is the topology of a lab (no namespaces): nodes × pods with the
// lab's addresses.
func fakeLab(nodes, pods int) *lab.Lab {
	l := &lab.Lab{}
	for i := range nodes {
		n := lab.Node{Name: fmt.Sprintf("node%d", i)}
		for j := range pods {
			n.Pods = append(n.Pods, lab.Pod{Name: fmt.Sprintf("node%d-pod%d", i, j), Node: n.Name, IP: fmt.Sprintf("198.19.%d.%d", i, 10+j)})
		}
		l.Nodes = append(l.Nodes, n)
	}
	return l
}

// Each pod-to-service placement has its own test Service: same-node
// 198.18.128.2 in front of node0's pods but the client, other-node
// 198.18.128.1 in front of node1's; a lab that cannot host one says why.
func TestPlacementServices(t *testing.T) {
	svcs, err := placementServices(fakeLab(2, 3), []string{suite.PodToPodSameNode, suite.PodToServiceSameNode, suite.PodToServiceOtherNode}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(svcs) != 14 {
		t.Fatalf("%d Service ports, want 7 per test Service", len(svcs))
	}
	for _, s := range svcs {
		vip, eps := "198.18.128.2", []string{"198.19.0.11", "198.19.0.12"}
		if s.Name == "server" {
			vip, eps = "198.18.128.1", []string{"198.19.1.10", "198.19.1.11", "198.19.1.12"}
		}
		var got []string
		for _, ep := range s.Endpoints {
			got = append(got, ep.IP.String())
			if ep.Port != s.Port {
				t.Errorf("%s: endpoint port %d", s.Key(), ep.Port)
			}
		}
		if s.VIP.String() != vip || strings.Join(got, ",") != strings.Join(eps, ",") {
			t.Errorf("%s: VIP %s endpoints %v, want %s %v", s.Key(), s.VIP, got, vip, eps)
		}
	}
	if err := (datapath.Spec{Services: svcs}).Validate(); err != nil {
		t.Errorf("both test Services in one spec: %v", err)
	}
	for _, c := range []struct {
		nodes, pods int
		placement   string
		want        string
	}{
		{1, 2, suite.PodToServiceOtherNode, "needs at least 2 lab nodes, the lab has 1"},
		{2, 1, suite.PodToServiceSameNode, "needs at least 2 pods per node (the client node0-pod0 and an endpoint), the lab has 1"},
	} {
		if _, err := placementServices(fakeLab(c.nodes, c.pods), []string{c.placement}, 1); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%d nodes × %d pods, %s: %v, want %q", c.nodes, c.pods, c.placement, err, c.want)
		}
	}
}
