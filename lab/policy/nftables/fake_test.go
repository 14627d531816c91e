package nftables

import (
	"context"
	"net/netip"
	"slices"
	"testing"

	"sigs.k8s.io/knftables"

	"github.com/cnibench/cnibench/datapath"
	"github.com/cnibench/cnibench/lab/policy"
)

// The transactions touch no kernel, so these run without root on
// knftables' fake, as kube-proxy tests its nftables proxier.

func testSpec() policy.Spec {
	ports := []policy.Port{{Protocol: datapath.TCP, Port: 443}, {Protocol: datapath.TCP, Port: 80}, {Protocol: datapath.UDP, Port: 0}}
	return policy.Spec{Pods: []policy.PodPolicy{{
		Pod: "node0-pod0", Node: "node0", IP: netip.MustParseAddr("198.19.0.10"), HostIface: "cnbp0",
		Ingress: []policy.Rule{{Peers: []netip.Prefix{netip.MustParsePrefix("198.19.0.11/32"), netip.MustParsePrefix("10.1.2.3/8")}, Ports: ports}},
		Egress:  []policy.Rule{{Peers: []netip.Prefix{netip.MustParsePrefix("198.19.0.12/32")}}},
	}}}
}

func syncFake(t *testing.T, fake *knftables.Fake, spec policy.Spec, prev objects) objects {
	t.Helper()
	tx, now, err := transaction(fake.NewTransaction(), spec, prev)
	if err != nil {
		t.Fatal(err)
	}
	if err := fake.Run(context.Background(), tx); err != nil {
		t.Fatalf("transaction: %v\n%s", err, tx)
	}
	return now
}

func rulesOf(fake *knftables.Fake, chain string) []string {
	var out []string
	for _, r := range fake.Table.Chains[chain].Rules {
		out = append(out, r.Rule)
	}
	return out
}

// The base chain at forward dispatches by interface; a pod chain has one
// rule per protocol (the set for two peers, an inline address for one)
// and a drop counted by the named counter; a smaller spec leaves no chain
// or set of the old one.
func TestTransactionOnFake(t *testing.T) {
	fake := knftables.NewFake(knftables.IPv4Family, "cnb-x-policy")
	spec := testSpec()
	prev := syncFake(t, fake, spec, objects{})
	tbl := fake.Table
	base := tbl.Chains[baseChain]
	if base == nil || base.Hook == nil || *base.Hook != knftables.ForwardHook || tbl.Counters[drops] == nil {
		t.Fatalf("no base chain at forward or no counter: %s", fake.Dump())
	}
	if got, want := rulesOf(fake, baseChain), []string{"ct state established,related accept",
		`oifname "cnbp0" jump ingress-node0-pod0`, `iifname "cnbp0" jump egress-node0-pod0`}; !slices.Equal(got, want) {
		t.Errorf("base chain rules %q, want %q", got, want)
	}
	if got, want := rulesOf(fake, "ingress-node0-pod0"), []string{
		"ip saddr @ingress-node0-pod0-0 tcp dport { 80, 443 } return",
		"ip saddr @ingress-node0-pod0-0 meta l4proto udp return",
		`counter name "drops" drop`}; !slices.Equal(got, want) {
		t.Errorf("ingress rules %q, want %q", got, want)
	}
	if got := rulesOf(fake, "egress-node0-pod0"); len(got) != 2 || got[0] != "ip daddr 198.19.0.12/32 return" {
		t.Errorf("egress rules %q", got)
	}
	set := tbl.Sets["ingress-node0-pod0-0"]
	if set == nil || len(set.Elements) != 2 || set.FindElement("10.0.0.0/8") == nil || set.FindElement("198.19.0.11/32") == nil {
		t.Fatalf("set: %s", fake.Dump())
	}
	// The same spec again: the set is deleted and made again in one
	// transaction, with its elements.
	prev = syncFake(t, fake, spec, prev)
	if set := fake.Table.Sets["ingress-node0-pod0-0"]; set == nil || len(set.Elements) != 2 {
		t.Fatalf("set after a second sync: %s", fake.Dump())
	}
	spec.Pods[0].Ingress = nil
	syncFake(t, fake, spec, prev)
	tbl = fake.Table
	if len(tbl.Chains) != 2 || len(tbl.Sets) != 0 || tbl.Counters[drops] == nil {
		t.Errorf("after dropping the ingress policy: %s", fake.Dump())
	}
}

// Verify's parser reads nft's JSON (recorded from nft 1.0.6) into the
// keys the transaction's rules have.
func TestParseListing(t *testing.T) {
	out := `{"nftables": [{"metainfo": {"version": "1.0.6"}}, {"table": {"family": "ip", "name": "cnb-x-policy", "handle": 1}},
{"counter": {"family": "ip", "name": "drops", "table": "cnb-x-policy", "handle": 3, "packets": 5, "bytes": 300}},
{"set": {"family": "ip", "name": "ingress-p-0", "table": "cnb-x-policy", "type": "ipv4_addr", "handle": 4, "flags": ["interval"], "elem": [{"prefix": {"addr": "10.0.0.0", "len": 8}}, "198.18.0.1"]}},
{"chain": {"family": "ip", "table": "cnb-x-policy", "name": "policy-forward", "handle": 1, "type": "filter", "hook": "forward", "prio": 0, "policy": "accept"}},
{"chain": {"family": "ip", "table": "cnb-x-policy", "name": "ingress-p", "handle": 2}},
{"chain": {"family": "ip", "table": "other", "name": "ingress-q", "handle": 2}},
{"rule": {"family": "ip", "table": "cnb-x-policy", "chain": "policy-forward", "handle": 5, "expr": [{"match": {"op": "in", "left": {"ct": {"key": "state"}}, "right": ["established", "related"]}}, {"accept": null}]}},
{"rule": {"family": "ip", "table": "cnb-x-policy", "chain": "policy-forward", "handle": 6, "expr": [{"match": {"op": "==", "left": {"meta": {"key": "oifname"}}, "right": "cnbp0"}}, {"jump": {"target": "ingress-p"}}]}},
{"rule": {"family": "ip", "table": "cnb-x-policy", "chain": "ingress-p", "handle": 8, "expr": [{"match": {"op": "==", "left": {"payload": {"protocol": "ip", "field": "saddr"}}, "right": "@ingress-p-0"}}, {"match": {"op": "==", "left": {"payload": {"protocol": "tcp", "field": "dport"}}, "right": {"set": [443, 80]}}}, {"return": null}]}},
{"rule": {"family": "ip", "table": "cnb-x-policy", "chain": "ingress-p", "handle": 10, "expr": [{"match": {"op": "==", "left": {"payload": {"protocol": "ip", "field": "saddr"}}, "right": "198.19.0.12"}}, {"match": {"op": "==", "left": {"meta": {"key": "l4proto"}}, "right": "udp"}}, {"return": null}]}},
{"rule": {"family": "ip", "table": "cnb-x-policy", "chain": "ingress-p", "handle": 12, "expr": [{"counter": "drops"}, {"drop": null}]}}]}`
	l, err := parseListing([]byte(out), "cnb-x-policy")
	if err != nil {
		t.Fatal(err)
	}
	if !l.base || !l.ctAccept || !l.counter || l.packets != 5 || l.chains != 2 || l.elements != 2 || l.dropRules["ingress-p"] != 1 {
		t.Fatalf("parsed %+v", l)
	}
	if !l.view.Dispatch["ingress cnbp0 ingress-p"] {
		t.Errorf("dispatch %v", l.view.Dispatch)
	}
	allow := l.view.Allow["ingress-p"]
	for _, k := range []string{"ingress-p-0 src tcp 80,443", "198.19.0.12/32 src udp "} {
		if _, ok := allow[k]; !ok {
			t.Errorf("allow rule %q not read; have %v", k, allow)
		}
	}
	if !l.view.Sets["ingress-p-0"][netip.MustParsePrefix("198.18.0.1/32")] {
		t.Errorf("sets %v", l.view.Sets)
	}
	if _, err := parseListing([]byte(`{"nftables": [{"set": {"family": "ip", "table": "cnb-x-policy", "name": "s", "elem": [{"range": ["1.1.1.1", "1.1.1.9"]}]}}]}`), "cnb-x-policy"); err == nil {
		t.Error("a range element (auto-merged set) was read as if it were a prefix")
	}
}
