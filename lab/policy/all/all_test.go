package all

import (
	"slices"
	"testing"

	"github.com/cnibench/cnibench/lab/policy"
)

// Every Service datapath family of the lab finds its enforcer.
func TestForDatapath(t *testing.T) {
	for dp, want := range map[string]string{"": "iptables", "iptables": "iptables", "iptables-legacy": "iptables",
		"nftables": "nftables", "nftables-flat": "nftables"} {
		v, err := policy.ForDatapath(dp)
		if err != nil || v.Name != want {
			t.Errorf("ForDatapath(%q) = %q, %v; want %q", dp, v.Name, err, want)
		}
	}
	if n := policy.Names(); !slices.Contains(n, "iptables") || !slices.Contains(n, "nftables") {
		t.Errorf("Names() = %v", n)
	}
}
