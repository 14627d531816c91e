package nftables

import (
	"context"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/knftables"

	"github.com/cnibench/cnibench/datapath"
	"github.com/cnibench/cnibench/lab/labtest"
)

// The layout's transactions touch no kernel, so these run without root on
// knftables' fake, as kube-proxy tests its nftables proxier: the base
// chains and their jumps are kube-proxy v1.34's, and a second sync that
// drops a Service leaves none of its chains behind.

// fakeDatapath is a kube-proxy-layout Datapath writing into a fake table.
func fakeDatapath() (*Datapath, *knftables.Fake) {
	fake := knftables.NewFake(knftables.IPv4Family, table)
	return &Datapath{nft: fake, opts: layouts[0].opts}, fake
}

// syncFake runs one sync of spec into the fake, as Program would into the
// kernel (without its nft -f): the transaction, then the flat layout's
// elements written as text.
func syncFake(t *testing.T, d *Datapath, fake *knftables.Fake, spec datapath.Spec) {
	t.Helper()
	spec = spec.InKubeProxyOrder()
	tx, created, elements := d.transaction(&spec, !d.synced)
	if err := fake.Run(context.Background(), tx); err != nil {
		t.Fatalf("sync of %d Services: %v", len(spec.Services), err)
	}
	if err := fake.ParseDump(string(elements)); err != nil {
		t.Fatalf("elements of %d Services: %v", len(spec.Services), err)
	}
	d.synced, d.prev = true, map[string]bool{}
	for c := range created {
		if isServiceChain(c) {
			d.prev[c] = true
		}
	}
	d.last = &spec
}

func TestBaseChainsAreKubeProxy134s(t *testing.T) {
	d, fake := fakeDatapath()
	syncFake(t, d, fake, datapath.Spec{Services: datapath.DummyServices(2, 2)})
	want := map[string]struct {
		hook     knftables.BaseChainHook
		priority knftables.BaseChainPriority
		rules    []string
	}{
		"filter-prerouting-pre-dnat": {knftables.PreroutingHook, knftables.DNATPriority + "-10", []string{"ct state new jump firewall-check"}},
		"filter-output-pre-dnat":     {knftables.OutputHook, knftables.DNATPriority + "-10", []string{"ct state new jump firewall-check"}},
		"filter-input":               {knftables.InputHook, knftables.FilterPriority, []string{"ct state new jump nodeport-endpoints-check", "ct state new jump service-endpoints-check"}},
		"filter-forward":             {knftables.ForwardHook, knftables.FilterPriority, []string{"ct state new jump service-endpoints-check", "ct state new jump cluster-ips-check"}},
		"filter-output":              {knftables.OutputHook, knftables.FilterPriority, []string{"ct state new jump service-endpoints-check", "ct state new jump cluster-ips-check"}},
		"nat-prerouting":             {knftables.PreroutingHook, knftables.DNATPriority, []string{"jump services"}},
		"nat-output":                 {knftables.OutputHook, knftables.DNATPriority, []string{"jump services"}},
		"nat-postrouting":            {knftables.PostroutingHook, knftables.SNATPriority, []string{"jump masquerading"}},
	}
	tbl := fake.Table
	var based []string
	for name, c := range tbl.Chains {
		if c.Hook == nil {
			continue
		}
		based = append(based, name)
		w, ok := want[name]
		if !ok {
			t.Errorf("base chain %s is not kube-proxy 1.34's", name)
			continue
		}
		if *c.Hook != w.hook || c.Priority == nil || *c.Priority != w.priority {
			t.Errorf("%s: hook %v priority %v, want %s %s", name, *c.Hook, c.Priority, w.hook, w.priority)
		}
		var rules []string
		for _, r := range c.Rules {
			rules = append(rules, r.Rule)
		}
		if !slices.Equal(rules, w.rules) {
			t.Errorf("%s rules %q, want %q", name, rules, w.rules)
		}
	}
	if len(based) != len(want) {
		t.Errorf("base chains %v, want the %d of kube-proxy 1.34", based, len(want))
	}
}

// A Service dropped from the spec loses its service chain, its endpoint
// chains and its service-ips element on the next sync; the others keep
// theirs (kube-proxy's partial sync leaves them as they are).
func TestFakeSyncDropsStaleService(t *testing.T) {
	d, fake := fakeDatapath()
	gone := labtest.TestService("198.19.1.10", []uint16{1, 2})
	kept := datapath.DummyServices(3, 2)
	syncFake(t, d, fake, datapath.Spec{Services: append(slices.Clone(kept), gone)})
	if fake.Table.Chains[serviceChain(&gone)] == nil {
		t.Fatalf("first sync lacks %s", serviceChain(&gone))
	}
	syncFake(t, d, fake, datapath.Spec{Services: kept})
	for name := range fake.Table.Chains {
		if strings.Contains(name, gone.Namespace+"/"+gone.Name+"/") {
			t.Errorf("chain %s of the dropped Service is left", name)
		}
	}
	for i := range kept {
		if fake.Table.Chains[serviceChain(&kept[i])] == nil {
			t.Errorf("chain %s of a kept Service is gone", serviceChain(&kept[i]))
		}
	}
	elems, err := fake.ListElements(context.Background(), "map", serviceIPsMap)
	if err != nil {
		t.Fatal(err)
	}
	if len(elems) != len(kept) {
		t.Errorf("%d service-ips elements after the drop, want %d", len(elems), len(kept))
	}
}

// The flat layout at two sweep steps on the fake: Services with 2 and 4
// endpoints get the lb-2 and lb-4 chains and one endpoints-<proto>
// element per endpoint; the next step, without the 2-endpoint Services,
// deletes lb-2-endpoints and drops their elements and hairpin pairs.
func TestFakeFlatSweepStep(t *testing.T) {
	fake := knftables.NewFake(knftables.IPv4Family, table)
	d := &Datapath{nft: fake, opts: layouts[1].opts}
	dummies := datapath.DummyServices(3, 4)
	syncFake(t, d, fake, datapath.Spec{Services: append(labtest.GoldenSpec().Services, dummies...)})
	checkFlatFake(t, fake, []string{"lb-2-endpoints", "lb-4-endpoints"}, map[string]int{
		serviceIPsMap: 6, endpointsMap("tcp"): 2*2 + 3*4, endpointsMap("udp"): 2, hairpinSet: 6 + distinctIPs(dummies)})
	syncFake(t, d, fake, datapath.Spec{Services: dummies})
	checkFlatFake(t, fake, []string{"lb-4-endpoints"}, map[string]int{
		serviceIPsMap: 3, endpointsMap("tcp"): 3 * 4, endpointsMap("udp"): 0, hairpinSet: distinctIPs(dummies)})
}

// checkFlatFake fails unless the fake's lb chains are exactly lbs, each
// with its masquerade and two DNAT rules, and the sets and maps hold the
// numbers of elements in want.
func checkFlatFake(t *testing.T, fake *knftables.Fake, lbs []string, want map[string]int) {
	t.Helper()
	var got []string
	for name, c := range fake.Table.Chains {
		if strings.HasPrefix(name, lbPrefix) {
			got = append(got, name)
			if len(c.Rules) != 3 {
				t.Errorf("%s has %d rules, want 3", name, len(c.Rules))
			}
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, lbs) {
		t.Errorf("lb chains %q, want %q", got, lbs)
	}
	for name, n := range want {
		kind := "map"
		if fake.Table.Sets[name] != nil {
			kind = "set"
		}
		elems, err := fake.ListElements(context.Background(), kind, name)
		if err != nil || len(elems) != n {
			t.Errorf("%s %s: %d elements (%v), want %d", kind, name, len(elems), err, n)
		}
	}
}

func distinctIPs(svcs []datapath.Service) int {
	ips := map[string]bool{}
	for _, s := range svcs {
		for _, ep := range s.Endpoints {
			ips[ep.IP.String()] = true
		}
	}
	return len(ips)
}
