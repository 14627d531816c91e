package nftables

import (
	"net/netip"
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

// flatServices writes the lb chains of the endpoint counts in use into tx
// and returns every Service's set and map elements as nft text, to be
// sent after tx's: the same "add element" lines knftables would write,
// built with appends instead of one Element object and Fprintf each (at
// 30,000 Services that was more than 10% of the programming time).
func flatServices(tx *knftables.Transaction, spec *datapath.Spec, p syncParams, created map[string]bool) []byte {
	counts := map[int]bool{}
	for i := range spec.Services {
		counts[len(spec.Services[i].Endpoints)] = true
	}
	ns := make([]int, 0, len(counts))
	for n := range counts {
		ns = append(ns, n)
	}
	sort.Ints(ns)
	chains := make(map[int]string, len(ns))
	for _, n := range ns {
		c := lbChain(n)
		chains[n] = c
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
	prefix := "add element ip " + table + " "
	epMaps := map[string]string{}
	for _, pr := range flatProtos {
		epMaps[pr] = endpointsMap(pr)
	}
	b := make([]byte, 0, len(spec.Services)*(200+100*4))
	hairpin := map[netip.Addr]bool{}
	for i := range spec.Services {
		s := &spec.Services[i]
		pr := proto(s)
		b = append(b, prefix...)
		b = append(b, clusterIPsSet+" { "...)
		b = s.VIP.AppendTo(b)
		b = append(b, " }\n"...)
		b = append(b, prefix...)
		b = append(b, serviceIPsMap+" { "...)
		b = s.VIP.AppendTo(b)
		b = append(b, " . "...)
		b = append(b, pr...)
		b = append(b, " . "...)
		b = strconv.AppendUint(b, uint64(s.Port), 10)
		b = append(b, " : goto "...)
		b = append(b, chains[len(s.Endpoints)]...)
		b = append(b, " }\n"...)
		for n, ep := range s.Endpoints {
			b = append(b, prefix...)
			b = append(b, epMaps[pr]...)
			b = append(b, " { "...)
			b = s.VIP.AppendTo(b)
			b = append(b, " . "...)
			b = strconv.AppendUint(b, uint64(s.Port), 10)
			b = append(b, " . "...)
			b = strconv.AppendInt(b, int64(n), 10)
			b = append(b, " : "...)
			b = ep.IP.AppendTo(b)
			b = append(b, " . "...)
			b = strconv.AppendUint(b, uint64(ep.Port), 10)
			b = append(b, " }\n"...)
			if !hairpin[ep.IP] {
				hairpin[ep.IP] = true
				b = append(b, prefix...)
				b = append(b, hairpinSet+" { "...)
				b = ep.IP.AppendTo(b)
				b = append(b, " . "...)
				b = ep.IP.AppendTo(b)
				b = append(b, " }\n"...)
			}
		}
	}
	return b
}
