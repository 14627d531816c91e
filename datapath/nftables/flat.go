package nftables

import (
	"sort"
	"strconv"
	"strings"

	"github.com/cnibench/cnibench/datapath"
	"sigs.k8s.io/knftables"
)

// The flat layout ("nftables-flat") is the design proposed upstream to
// cut kube-proxy's nftables programming cost (kubernetes PR 140362, "use a
// single map", for issue 139513): the kernel spends its time on the
// thousands of per-Service chains and anonymous numgen vmaps, each new set
// costing time proportional to the sets already in the table. As in the
// PR, no object is created per Service or per endpoint:
//
//	map service-ips    VIP . proto . port : goto lb-<n>-endpoints   (as kube-proxy)
//	map endpoints-tcp  VIP . port . bucket : endpoint IP . port      (endpoints-udp alike)
//	chain lb-<n>-endpoints, one per endpoint count n in use:
//	    ip saddr != <cluster CIDR> jump mark-for-masquerade
//	    meta l4proto tcp dnat ip addr . port to ip daddr . tcp dport . numgen random mod <n> map @endpoints-tcp
//	    meta l4proto udp dnat ip addr . port to ip daddr . udp dport . numgen random mod <n> map @endpoints-udp
//	set endpoint-hairpin  endpoint IP . endpoint IP, checked in masquerading
//
// The PR's test output shows the lb chains and per-protocol maps; what it
// leaves open is done here so that the packet path means the same as
// kube-proxy's: the off-cluster masquerade rule moves from each service
// chain to the shared lb chain (it only sees Service traffic, so it
// matches the same packets), and the hairpin masquerade, which kube-proxy
// does per endpoint chain before DNAT ("ip saddr <endpoint>"), is done
// after DNAT in the masquerading chain by looking up saddr . daddr in a set
// of "e . e" pairs, one per endpoint IP. (One map keyed by protocol too
// would be the same lookup, but nft 1.0.6 cannot re-read such a rule:
// "conflicting protocols specified: tcp vs. th".) The rest of the table
// (filter chains, masquerading, cluster-ips, the no-endpoint and NodePort
// maps) is kube-proxy's.

// flatSetup adds the flat layout's named maps and set, flushed for a full
// sync.
func flatSetup(tx *knftables.Transaction) {
	for _, pr := range flatProtos {
		m := endpointsMap(pr)
		tx.Add(&knftables.Map{Name: m,
			TypeOf:  "ip daddr . " + pr + " dport . numgen random mod 1 : ip daddr . " + pr + " dport",
			Comment: knftables.PtrTo(strings.ToUpper(pr) + " endpoints by ClusterIP, port and bucket")})
		tx.Flush(&knftables.Map{Name: m})
	}
	tx.Add(&knftables.Set{Name: hairpinSet, Type: "ipv4_addr . ipv4_addr",
		Comment: knftables.PtrTo("endpoint . endpoint pairs: hairpin connections to masquerade")})
	tx.Flush(&knftables.Set{Name: hairpinSet})
}

// flatServices writes every Service's elements and the lb chains of the
// endpoint counts in use.
func flatServices(tx *knftables.Transaction, spec *datapath.Spec, p syncParams, created map[string]bool) {
	counts := map[int]bool{}
	for i := range spec.Services {
		counts[len(spec.Services[i].Endpoints)] = true
	}
	ns := make([]int, 0, len(counts))
	for n := range counts {
		ns = append(ns, n)
	}
	sort.Ints(ns)
	for _, n := range ns {
		c := lbChain(n)
		ensureChain(tx, created, c)
		if p.clusterCIDR != "" {
			tx.Add(&knftables.Rule{Chain: c, Rule: knftables.Concat("ip saddr !=", p.clusterCIDR, "jump", markMasqChain)})
		}
		for _, pr := range flatProtos {
			tx.Add(&knftables.Rule{Chain: c, Rule: knftables.Concat(
				"meta l4proto", pr, "dnat ip addr . port to ip daddr .", pr, "dport . numgen random mod", n,
				"map", "@", endpointsMap(pr))})
		}
	}
	hairpin := map[string]bool{}
	for i := range spec.Services {
		s := &spec.Services[i]
		pr, port := proto(s), strconv.Itoa(int(s.Port))
		vip := s.VIP.String()
		tx.Add(&knftables.Element{Set: clusterIPsSet, Key: []string{vip}})
		tx.Add(&knftables.Element{Map: serviceIPsMap, Key: []string{vip, pr, port}, Value: []string{"goto " + lbChain(len(s.Endpoints))}})
		for b, ep := range s.Endpoints {
			ip := ep.IP.String()
			tx.Add(&knftables.Element{Map: endpointsMap(pr),
				Key:   []string{vip, port, strconv.Itoa(b)},
				Value: []string{ip, strconv.Itoa(int(ep.Port))}})
			if !hairpin[ip] {
				hairpin[ip] = true
				tx.Add(&knftables.Element{Set: hairpinSet, Key: []string{ip, ip}})
			}
		}
	}
}
