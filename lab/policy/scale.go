package policy

import (
	"fmt"
	"net/netip"
)

// scaleBase is where dummy peers of a policy-scale step come from: the
// lower half of the lab's benchmarking range 198.18.0.0/15, below the
// ClusterIPs (198.18.128.0/17) and the pods (198.19.0.0/16). They only
// fill match tables; no traffic is ever sent to them.
var scaleBase = netip.MustParsePrefix("198.18.0.0/17")

// MaxScalePeers is how many distinct dummy /32 peers scaleBase holds.
const MaxScalePeers = 1 << 15

// ScaleRules returns n dummy rules, each allowing one distinct /32 peer
// on port (a NetworkPolicy with n ingress rules): what a policy-scale step
// adds in front of a pod's real rules. Netfilter renders a rule each, so
// its cost should grow with n; a policy map should not.
func ScaleRules(n int, port Port) ([]Rule, error) {
	peers, err := ScalePeers(n)
	if err != nil {
		return nil, err
	}
	rules := make([]Rule, n)
	for i, p := range peers {
		rules[i] = Rule{Peers: []netip.Prefix{p}, Ports: []Port{port}}
	}
	return rules, nil
}

// ScalePeers returns n distinct dummy /32 peers (one rule with n peer
// CIDRs: what sets and LPM maps should keep flat).
func ScalePeers(n int) ([]netip.Prefix, error) {
	if n < 0 || n > MaxScalePeers {
		return nil, fmt.Errorf("policy scale: %d peers, want 0..%d", n, MaxScalePeers)
	}
	out := make([]netip.Prefix, n)
	a := scaleBase.Addr().As4()
	base := uint32(a[0])<<24 | uint32(a[1])<<16 | uint32(a[2])<<8 | uint32(a[3])
	for i := range out {
		v := base + uint32(i)
		out[i] = netip.PrefixFrom(netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), 32)
	}
	return out, nil
}
