package all

import (
	"slices"
	"testing"

	"github.com/cnibench/cnibench/datapath"
)

// The registry lists the datapaths in the order --service-datapath and
// every error have always listed them, with the lab-name tokens, scopes
// and netfilter flags the call sites used to hard-code.
func TestRegistered(t *testing.T) {
	want := []struct {
		name, short string
		netfilter   bool
		scope       datapath.Scope
	}{
		{"iptables", "ipt", true, datapath.PerNode},
		{"iptables-legacy", "iptl", true, datapath.PerNode},
		{"nftables", "nft", true, datapath.PerNode},
		{"nftables-flat", "nftf", true, datapath.PerNode},
		{"ebpf", "ebpf", false, datapath.PerLab},
		{"ebpf-tc", "ebpftc", false, datapath.PerNode},
	}
	var names []string
	for _, w := range want {
		names = append(names, w.name)
		v, ok := datapath.Lookup(w.name)
		if !ok || v.Name != w.name || v.Short != w.short || v.Netfilter != w.netfilter || v.Scope != w.scope || v.Open == nil {
			t.Errorf("%s: registered as %+v (%v), want %+v", w.name, v, ok, w)
		}
		if datapath.Netfilter(w.name) != w.netfilter {
			t.Errorf("Netfilter(%s) = %v", w.name, !w.netfilter)
		}
	}
	if got := datapath.Names(); !slices.Equal(got, names) {
		t.Errorf("Names() = %v, want %v", got, names)
	}
	if got, want := datapath.Choices(), "iptables, iptables-legacy, nftables, nftables-flat, ebpf or ebpf-tc"; got != want {
		t.Errorf("Choices() = %q, want %q", got, want)
	}
	// A cluster's Service proxy names are not lab datapaths.
	for _, n := range []string{"kube-proxy-iptables", "kube-proxy-nftables", "cilium", "iptables-nft", ""} {
		if _, ok := datapath.Lookup(n); ok || datapath.Netfilter(n) {
			t.Errorf("%q is registered or netfilter", n)
		}
	}
}

// The eBPF socket LB refuses a lab without cgroup v2 with the message the
// lab always gave, before touching the kernel.
func TestSocketLBNeedsCgroup(t *testing.T) {
	v, _ := datapath.Lookup("ebpf")
	d, err := v.Open(datapath.Site{})
	if d != nil || err == nil || err.Error() != "the socket load balancer attaches to the lab's cgroup, and this machine has no cgroup v2" {
		t.Errorf("Open without a cgroup: %v, %v", d, err)
	}
}
