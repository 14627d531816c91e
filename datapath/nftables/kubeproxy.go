package nftables

import (
	"strconv"

	"github.com/cnibench/cnibench/datapath"
	"sigs.k8s.io/knftables"
)

// syncParams is what a full sync depends on besides the Services.
type syncParams struct {
	mark        string // masquerade mark as kube-proxy prints it ("%#08x")
	clusterCIDR string // local-traffic detector; "" = none
	serviceCIDR string // kube-proxy's ServiceCIDRs; "" = no drop rule
	first       bool   // first sync of this Datapath: start from an empty table
	flat        bool
}

// ensureChain is kube-proxy's: add and flush a chain once per transaction.
func ensureChain(tx *knftables.Transaction, created map[string]bool, chain string) {
	if created[chain] {
		return
	}
	created[chain] = true
	tx.Add(&knftables.Chain{Name: chain})
	tx.Flush(&knftables.Chain{Name: chain})
}

// setup is kube-proxy's setupNFTables for IPv4 with NodePorts on all
// local addresses: the table, base chains, jump rules, masquerading,
// cluster-IP checks, the no-endpoint and firewall maps and the service
// dispatch maps, every map flushed (a full sync re-adds every element).
// The first sync of a Datapath deletes any table left by an earlier run
// inside the same transaction, where kube-proxy re-creates only its base
// chains: a fresh namespace sees no difference.
func setup(tx *knftables.Transaction, p syncParams, created map[string]bool) {
	tx.Add(&knftables.Table{Comment: knftables.PtrTo("rules for kube-proxy")})
	if p.first {
		tx.Delete(&knftables.Table{})
		tx.Add(&knftables.Table{Comment: knftables.PtrTo("rules for kube-proxy")})
	}
	if p.flat {
		flatSetup(tx)
	}
	for _, bc := range baseChains {
		c := &knftables.Chain{Name: bc.name, Type: knftables.PtrTo(bc.chainType),
			Hook: knftables.PtrTo(bc.hook), Priority: knftables.PtrTo(bc.priority)}
		tx.Add(c)
		tx.Flush(c)
	}
	for _, c := range jumpChains {
		ensureChain(tx, created, c.dst)
		tx.Add(&knftables.Rule{Chain: c.src, Rule: knftables.Concat(c.extra, "jump", c.dst)})
	}
	for _, c := range []string{servicesChain, clusterIPsCheckChain, masqueradingChain, markMasqChain} {
		ensureChain(tx, created, c)
	}
	tx.Add(&knftables.Rule{Chain: markMasqChain, Rule: knftables.Concat("mark", "set", "mark", "or", p.mark)})
	if p.flat {
		// Hairpin: a connection DNATed back to the pod that opened it must
		// be masqueraded. kube-proxy checks "ip saddr <endpoint>" in each
		// endpoint chain; with no endpoint chains, the flat layout checks
		// after DNAT that source and destination are the same endpoint.
		tx.Add(&knftables.Rule{Chain: masqueradingChain, Rule: knftables.Concat(
			"ct status dnat", "ip saddr . ip daddr", "@", hairpinSet, "jump", markMasqChain)})
	}
	tx.Add(&knftables.Rule{Chain: masqueradingChain, Rule: knftables.Concat("mark", "and", p.mark, "==", "0", "return")})
	tx.Add(&knftables.Rule{Chain: masqueradingChain, Rule: knftables.Concat("mark", "set", "mark", "xor", p.mark)})
	tx.Add(&knftables.Rule{Chain: masqueradingChain, Rule: "masquerade fully-random"})

	tx.Add(&knftables.Set{Name: clusterIPsSet, Type: "ipv4_addr", Comment: knftables.PtrTo("Active ClusterIPs")})
	tx.Add(&knftables.Rule{Chain: clusterIPsCheckChain, Rule: knftables.Concat("ip", "daddr", "@", clusterIPsSet, "reject"),
		Comment: knftables.PtrTo("Reject traffic to invalid ports of ClusterIPs")})
	if p.serviceCIDR != "" {
		tx.Add(&knftables.Rule{Chain: clusterIPsCheckChain, Rule: knftables.Concat("ip", "daddr", "{", p.serviceCIDR, "}", "drop"),
			Comment: knftables.PtrTo("Drop traffic to unallocated ClusterIPs")})
	}
	// NodePorts on every local address: no nodeport-ips set ("add+delete"
	// makes sure it does not exist).
	tx.Add(&knftables.Set{Name: nodePortIPsSet, Type: "ipv4_addr", Comment: knftables.PtrTo("IPs that accept NodePort traffic")})
	tx.Delete(&knftables.Set{Name: nodePortIPsSet})

	tx.Add(&knftables.Map{Name: noEndpointServicesMap, Type: "ipv4_addr . inet_proto . inet_service : verdict",
		Comment: knftables.PtrTo("vmap to drop or reject packets to services with no endpoints")})
	tx.Add(&knftables.Map{Name: noEndpointNodePortsMap, Type: "inet_proto . inet_service : verdict",
		Comment: knftables.PtrTo("vmap to drop or reject packets to service nodeports with no endpoints")})
	tx.Add(&knftables.Chain{Name: rejectChain, Comment: knftables.PtrTo("helper for @no-endpoint-services / @no-endpoint-nodeports")})
	tx.Flush(&knftables.Chain{Name: rejectChain})
	tx.Add(&knftables.Rule{Chain: rejectChain, Rule: "reject"})
	tx.Add(&knftables.Rule{Chain: serviceEndpointsCheckChain, Rule: knftables.Concat(
		"ip", "daddr", ".", "meta l4proto", ".", "th dport", "vmap", "@", noEndpointServicesMap)})
	tx.Add(&knftables.Rule{Chain: nodePortEndpointsCheckChain, Rule: knftables.Concat(
		"ip daddr != 127.0.0.0/8", "meta l4proto . th dport", "vmap", "@", noEndpointNodePortsMap)})

	tx.Add(&knftables.Map{Name: firewallIPsMap, Type: "ipv4_addr . inet_proto . inet_service : verdict",
		Comment: knftables.PtrTo("destinations that are subject to LoadBalancerSourceRanges")})
	ensureChain(tx, created, firewallCheckChain)
	tx.Add(&knftables.Rule{Chain: firewallCheckChain, Rule: knftables.Concat(
		"ip", "daddr", ".", "meta l4proto", ".", "th dport", "vmap", "@", firewallIPsMap)})

	tx.Add(&knftables.Map{Name: serviceIPsMap, Type: "ipv4_addr . inet_proto . inet_service : verdict",
		Comment: knftables.PtrTo("ClusterIP, ExternalIP and LoadBalancer IP traffic")})
	tx.Add(&knftables.Map{Name: serviceNodePortsMap, Type: "inet_proto . inet_service : verdict",
		Comment: knftables.PtrTo("NodePort traffic")})
	tx.Add(&knftables.Rule{Chain: servicesChain, Rule: knftables.Concat(
		"ip", "daddr", ".", "meta l4proto", ".", "th dport", "vmap", "@", serviceIPsMap)})
	tx.Add(&knftables.Rule{Chain: servicesChain, Rule: knftables.Concat(
		"fib daddr type local", "ip daddr != 127.0.0.0/8", "meta l4proto . th dport", "vmap", "@", serviceNodePortsMap)})

	for _, m := range []string{serviceIPsMap, firewallIPsMap, noEndpointServicesMap, noEndpointNodePortsMap, serviceNodePortsMap} {
		tx.Flush(&knftables.Map{Name: m})
	}
	tx.Flush(&knftables.Set{Name: clusterIPsSet})
}

// writeService is kube-proxy's per-Service part of syncProxyRules for a
// ClusterIP Service with endpoints and Cluster traffic policy: the
// cluster-ips and service-ips elements, a service chain (masquerade of
// off-cluster sources, then one "numgen random mod n vmap" rule over an
// anonymous map of endpoint chains) and one chain per endpoint (hairpin
// masquerade, DNAT).
//
// With unchanged (kube-proxy's partial sync of a Service that did not
// change), only the set and map elements are written: the chains stay as
// the kernel holds them, and are only marked as in use so they are not
// deleted as stale.
func writeService(tx *knftables.Transaction, s *datapath.Service, p syncParams, created map[string]bool, unchanged bool) {
	pr := proto(s)
	sc := serviceChain(s)
	eps := make([]string, len(s.Endpoints))
	for i, ep := range s.Endpoints {
		eps[i] = endpointChain(s, ep)
	}
	if unchanged {
		created[sc] = true
		for _, ec := range eps {
			created[ec] = true
		}
	} else {
		for _, ec := range eps {
			ensureChain(tx, created, ec)
		}
		ensureChain(tx, created, sc)
	}
	// The elements after the chains they jump to (nft applies in order).
	tx.Add(&knftables.Element{Set: clusterIPsSet, Key: []string{s.VIP.String()}})
	tx.Add(&knftables.Element{Map: serviceIPsMap,
		Key:   []string{s.VIP.String(), pr, strconv.Itoa(int(s.Port))},
		Value: []string{"goto " + sc}})
	if unchanged {
		return
	}
	if p.clusterCIDR != "" {
		// As kube-proxy 1.34 writes it: the ClusterIP alone (the port
		// was matched by the service-ips element that led here).
		tx.Add(&knftables.Rule{Chain: sc, Rule: knftables.Concat(
			"ip", "daddr", s.VIP, "ip saddr !=", p.clusterCIDR, "jump", markMasqChain)})
	}
	var elements []string
	for i, ec := range eps {
		elements = append(elements, strconv.Itoa(i), ":", "goto", ec)
		if i != len(eps)-1 {
			elements = append(elements, ",")
		}
	}
	tx.Add(&knftables.Rule{Chain: sc, Rule: knftables.Concat(
		"numgen random mod", len(eps), "vmap", "{", elements, "}")})
	for i, ep := range s.Endpoints {
		tx.Add(&knftables.Rule{Chain: eps[i], Rule: knftables.Concat("ip", "saddr", ep.IP, "jump", markMasqChain)})
		tx.Add(&knftables.Rule{Chain: eps[i], Rule: knftables.Concat(
			"meta l4proto", pr, "dnat to", ep.IP.String()+":"+strconv.Itoa(int(ep.Port)))})
	}
}
