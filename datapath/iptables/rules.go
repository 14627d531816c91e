package iptables

import (
	"bytes"
	"fmt"
	"sort"
	"strconv"

	"github.com/cnibench/cnibench/datapath"
)

// largeClusterEndpointsThreshold is kube-proxy's: above this many endpoints
// it drops the per-endpoint comments to keep the ruleset small.
const largeClusterEndpointsThreshold = 1000

// batch is one iptables-restore input for a full sync.
type batch struct {
	text   []byte
	active map[string]bool // KUBE-SVC-/KUBE-SEP- chains the batch defines
}

// genParams is what a full sync depends on besides the Services.
type genParams struct {
	mark        string          // masquerade mark, "%#08x" as kube-proxy prints it
	clusterCIDR string          // local-traffic detector; "" = none
	liberal     bool            // nf_conntrack_tcp_be_liberal set: no INVALID drop rule
	addJumps    []jump          // jump rules missing from the built-in chains
	prev        map[string]bool // KUBE-SVC/SEP chains the kernel holds now
}

// generate writes the nat and filter tables as kube-proxy's syncProxyRules
// does for ClusterIP Services with endpoints, Cluster traffic policy, no
// session affinity, NodePorts on all local addresses and no localhost
// NodePorts: per table a chains buffer (declarations, which flush an
// existing chain) and a rules buffer, committed in one
// iptables-restore --noflush. Chains in p.prev that the spec no longer
// needs are flushed and deleted.
func generate(spec *datapath.Spec, p genParams) batch {
	total := spec.Endpoints()
	large := total > largeClusterEndpointsThreshold
	active := make(map[string]bool, len(spec.Services)+total)

	var b bytes.Buffer
	// filter: empty per-Service chains (every Service has endpoints) and
	// KUBE-FORWARD.
	b.WriteString("*filter\n")
	for _, c := range filterChains {
		chainLine(&b, c)
	}
	writeJumps(&b, "filter", p.addJumps)
	if !p.liberal {
		line(&b, "-A", chainForward, "-m", "conntrack", "--ctstate", "INVALID", "-j", "DROP")
	}
	line(&b, "-A", chainForward, "-m", "comment", "--comment", `"kubernetes forwarding rules"`,
		"-m", "mark", "--mark", p.mark+"/"+p.mark, "-j", "ACCEPT")
	line(&b, "-A", chainForward, "-m", "comment", "--comment", `"kubernetes forwarding conntrack rule"`,
		"-m", "conntrack", "--ctstate", "RELATED,ESTABLISHED", "-j", "ACCEPT")
	b.WriteString("COMMIT\n")

	var chains, rules bytes.Buffer
	chains.Grow(len(spec.Services)*30 + total*30)
	rules.Grow(len(spec.Services)*250 + total*300)
	for _, c := range natChains {
		chainLine(&chains, c)
	}
	writeJumps(&rules, "nat", p.addJumps)
	line(&rules, "-A", chainPostrouting, "-m", "mark", "!", "--mark", p.mark+"/"+p.mark, "-j", "RETURN")
	line(&rules, "-A", chainPostrouting, "-j", "MARK", "--xor-mark", p.mark)
	line(&rules, "-A", chainPostrouting, "-m", "comment", "--comment", `"kubernetes service traffic requiring SNAT"`,
		"-j", "MASQUERADE", "--random-fully")
	line(&rules, "-A", chainMarkMasq, "-j", "MARK", "--or-mark", p.mark)
	for i := range spec.Services {
		writeService(&chains, &rules, &spec.Services[i], p.clusterCIDR, large, active)
	}
	stale := make([]string, 0)
	for c := range p.prev {
		if !active[c] {
			stale = append(stale, c)
		}
	}
	sort.Strings(stale)
	for _, c := range stale {
		chainLine(&chains, c)
		line(&rules, "-X", c)
	}
	// Tail call to the NodePorts chain; must stay last in KUBE-SERVICES.
	line(&rules, "-A", chainServices, "-m", "comment",
		"--comment", `"kubernetes service nodeports; NOTE: this must be the last rule in this chain"`,
		"-m", "addrtype", "--dst-type", "LOCAL", "!", "-d", "127.0.0.0/8", "-j", chainNodePorts)

	out := make([]byte, 0, b.Len()+chains.Len()+rules.Len()+32)
	out = append(out, b.Bytes()...)
	out = append(out, "*nat\n"...)
	out = append(out, chains.Bytes()...)
	out = append(out, rules.Bytes()...)
	out = append(out, "COMMIT\n"...)
	return batch{text: out, active: active}
}

// writeService writes one Service port's KUBE-SERVICES rule, its KUBE-SVC
// chain (masquerade of off-cluster sources, then one statistic rule per
// endpoint with probability 1/(n-i), the last unconditional) and one
// KUBE-SEP chain per endpoint (hairpin masquerade, DNAT).
func writeService(chains, b *bytes.Buffer, s *datapath.Service, clusterCIDR string, large bool, active map[string]bool) {
	name := s.ServicePortName()
	pr := proto(s)
	sc := svcChain(s)
	seps := make([]string, len(s.Endpoints))
	eps := make([]string, len(s.Endpoints))
	chainLine(chains, sc)
	active[sc] = true
	for i, ep := range s.Endpoints {
		eps[i] = endpointString(ep)
		seps[i] = prefixSEP + hash16(name+pr+eps[i])
		chainLine(chains, seps[i])
		active[seps[i]] = true
	}
	vip := s.VIP.String()
	port := strconv.Itoa(int(s.Port))
	clusterIP := `"` + name + ` cluster IP"`

	line(b, "-A", chainServices, "-m", "comment", "--comment", clusterIP,
		"-m", pr, "-p", pr, "-d", vip, "--dport", port, "-j", sc)
	if clusterCIDR != "" {
		line(b, "-A", sc, "-m", "comment", "--comment", clusterIP,
			"-m", pr, "-p", pr, "-d", vip, "--dport", port, "!", "-s", clusterCIDR, "-j", chainMarkMasq)
	}
	n := len(s.Endpoints)
	for i := range s.Endpoints {
		words(b, "-A", sc)
		if !large {
			words(b, " -m comment --comment", `"`+name+" -> "+eps[i]+`"`)
		}
		if i < n-1 {
			words(b, " -m statistic --mode random --probability", probability(n-i))
		}
		line(b, " -j", seps[i])
	}
	for i, ep := range s.Endpoints {
		words(b, "-A", seps[i])
		if !large {
			words(b, " -m comment --comment", name)
		}
		line(b, " -s", ep.IP.String(), "-j", chainMarkMasq)
		words(b, "-A", seps[i])
		if !large {
			words(b, " -m comment --comment", name)
		}
		line(b, " -m", pr, "-p", pr, "-j DNAT --to-destination", eps[i])
	}
}

// probability is kube-proxy's computeProbability: 1/n with ten decimals,
// precomputed for small n as kube-proxy does.
func probability(n int) string {
	if n < len(probabilities) {
		return probabilities[n]
	}
	return fmt.Sprintf("%0.10f", 1.0/float64(n))
}

var probabilities = func() []string {
	p := make([]string, 1001)
	for n := 1; n < len(p); n++ {
		p[n] = fmt.Sprintf("%0.10f", 1.0/float64(n))
	}
	return p
}()

// writeJumps inserts the missing jump rules of table at the top of their
// built-in chains, as kube-proxy's EnsureRule(Prepend) does.
func writeJumps(b *bytes.Buffer, table string, js []jump) {
	for _, j := range js {
		if j.table != table {
			continue
		}
		args := append([]string{"-I", j.src}, j.extra...)
		args = append(args, "-m", "comment", "--comment", `"`+j.comment+`"`, "-j", j.dst)
		line(b, args...)
	}
}

func chainLine(b *bytes.Buffer, c string) {
	b.WriteString(":")
	b.WriteString(c)
	b.WriteString(" - [0:0]\n")
}

// line writes ws separated by spaces and ends the line.
func line(b *bytes.Buffer, ws ...string) {
	words(b, ws...)
	b.WriteByte('\n')
}

// words writes ws separated by spaces, without ending the line.
func words(b *bytes.Buffer, ws ...string) {
	for i, w := range ws {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(w)
	}
}
