package policypart

import (
	"fmt"
	"net/netip"

	"github.com/cnibench/cnibench/datapath"
	"github.com/cnibench/cnibench/lab"
	"github.com/cnibench/cnibench/lab/policy"
)

// policySpec is the NetworkPolicy of a benchmark: each server pod accepts
// every port from the clients only, each client reaches the servers only
// (egress), as a namespace with default-deny and one allow policy per
// direction would. scale dummy rules (policy.ScaleRules: another /32 peer
// and port each) go in front of each server's real rule, so a linear
// chain walks them all before it matches.
func policySpec(l *lab.Lab, clients, servers []string, scale int) (policy.Spec, error) {
	dummies, err := policy.ScaleRules(scale, policy.Port{Protocol: datapath.TCP, Port: scaleRulePort})
	if err != nil {
		return policy.Spec{}, err
	}
	prefixes := func(names []string) ([]netip.Prefix, error) {
		var out []netip.Prefix
		for _, n := range names {
			e, err := l.Endpoint(n)
			if err != nil {
				return nil, err
			}
			a, err := netip.ParseAddr(e.IP)
			if err != nil {
				return nil, fmt.Errorf("policy: %s: %w", n, err)
			}
			out = append(out, netip.PrefixFrom(a, 32))
		}
		return out, nil
	}
	clientPeers, err := prefixes(clients)
	if err != nil {
		return policy.Spec{}, err
	}
	serverPeers, err := prefixes(servers)
	if err != nil {
		return policy.Spec{}, err
	}
	var spec policy.Spec
	add := func(names []string, ingress, egress []policy.Rule) error {
		for _, n := range names {
			e, err := l.Endpoint(n)
			if err != nil {
				return err
			}
			ifc, err := l.HostIface(n)
			if err != nil {
				return err
			}
			spec.Pods = append(spec.Pods, policy.PodPolicy{Pod: n, Node: e.Node, IP: netip.MustParseAddr(e.IP),
				HostIface: ifc, Ingress: ingress, Egress: egress})
		}
		return nil
	}
	if err := add(clients, nil, []policy.Rule{{Peers: serverPeers}}); err != nil {
		return policy.Spec{}, err
	}
	if err := add(servers, append(dummies, policy.Rule{Peers: clientPeers}), nil); err != nil {
		return policy.Spec{}, err
	}
	return spec, spec.Validate()
}

// scaleRulePort is the port of the dummy rules: one no engine uses, so
// they only cost their matching.
const scaleRulePort = 9
