package policypart

import (
	"net/netip"
	"testing"

	"github.com/cnibench/cnibench/lab"
)

// twoByTwo is the default lab's plan without the kernel: 2 nodes × 2 pods.
func twoByTwo() *lab.Lab {
	l := &lab.Lab{Config: lab.Config{Name: "t"}, Prefix: "cnb-t-"}
	for i, ip := range [][]string{{"198.19.0.10", "198.19.0.11"}, {"198.19.1.10", "198.19.1.11"}} {
		n := lab.Node{Name: []string{"node0", "node1"}[i]}
		for j, a := range ip {
			n.Pods = append(n.Pods, lab.Pod{Name: n.Name + "-pod" + []string{"0", "1"}[j], Node: n.Name, IP: a})
		}
		l.Nodes = append(l.Nodes, n)
	}
	return l
}

// The benchmark's policy: servers take only their clients, clients reach
// only their servers; host interfaces are the lab's pod veths.
func TestPolicySpec(t *testing.T) {
	l := twoByTwo()
	spec, err := policySpec(l, []string{"node0-pod0"}, []string{"node1-pod0", "node0-pod1"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(spec.Pods) != 3 {
		t.Fatalf("%d pods in the policy, want 3: %+v", len(spec.Pods), spec.Pods)
	}
	c, s := spec.Pods[0], spec.Pods[1]
	if c.Pod != "node0-pod0" || c.Ingress != nil || len(c.Egress) != 1 || len(c.Egress[0].Peers) != 2 ||
		c.Egress[0].Peers[0] != netip.MustParsePrefix("198.19.1.10/32") || c.HostIface != "cnbp0" {
		t.Errorf("client policy %+v", c)
	}
	if s.Pod != "node1-pod0" || s.Node != "node1" || s.Egress != nil || len(s.Ingress) != 1 ||
		s.Ingress[0].Peers[0] != netip.MustParsePrefix("198.19.0.10/32") || len(s.Ingress[0].Ports) != 0 {
		t.Errorf("server policy %+v", s)
	}
	if spec.Pods[2].HostIface != "cnbp1" {
		t.Errorf("node0-pod1's host interface %q, want cnbp1", spec.Pods[2].HostIface)
	}
	if _, err := policySpec(l, []string{"node0-pod0"}, []string{"node7-pod0"}, 0); err == nil {
		t.Error("a server that is not in the lab was accepted")
	}
	// A policy-scale step: the dummies first, the real rule last.
	scaled, err := policySpec(l, []string{"node0-pod0"}, []string{"node1-pod0"}, 5)
	if err != nil {
		t.Fatal(err)
	}
	in := scaled.Pods[1].Ingress
	if len(in) != 6 || in[5].Peers[0] != netip.MustParsePrefix("198.19.0.10/32") || in[0].Ports[0].Port != scaleRulePort {
		t.Errorf("scaled ingress %+v: want 5 dummies on port %d, then the client", in, scaleRulePort)
	}
	if len(scaled.Pods[0].Egress) != 1 {
		t.Errorf("the client's egress grew with the scale: %+v", scaled.Pods[0].Egress)
	}
}
