package iptables

import (
	"bytes"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/cnibench/cnibench/datapath"
)

// largeClusterEndpointsThreshold is kube-proxy's: above this many endpoints
// it drops the per-endpoint comments to keep the ruleset small.
const largeClusterEndpointsThreshold = 1000

// batch is one iptables-restore input for a full sync.
type batch struct {
	text   []byte
	active map[string]bool   // KUBE-SVC-/KUBE-SEP- chains the kernel holds after the batch
	wrote  map[string]string // KUBE-SVC- chain → fingerprint of the Service it holds
	large  bool              // written in large cluster mode (no endpoint comments)
}

// genParams is what a full sync depends on besides the Services.
type genParams struct {
	mark        string          // masquerade mark, "%#08x" as kube-proxy prints it
	clusterCIDR string          // local-traffic detector; "" = none
	liberal     bool            // nf_conntrack_tcp_be_liberal set: no INVALID drop rule
	addJumps    []jump          // jump rules missing from the built-in chains
	prev        map[string]bool // KUBE-SVC/SEP chains the kernel holds now
	// held is, for a partial sync, each KUBE-SVC chain the kernel holds
	// with the fingerprint of the Service it was written for: a Service
	// whose fingerprint is unchanged keeps its chains as they are. Nil: a
	// full sync, every chain rewritten.
	held      map[string]string
	heldLarge bool // held was written in large cluster mode
}

// generate writes the nat and filter tables as kube-proxy's syncProxyRules
// does for ClusterIP Services with endpoints, Cluster traffic policy, no
// session affinity, NodePorts on all local addresses and no localhost
// NodePorts: per table the chain declarations (which flush an existing
// chain), then the rules, committed in one iptables-restore --noflush.
// Chains in p.prev that the spec no longer needs are flushed and deleted.
// With p.held (a partial sync, kube-proxy's MinimizeIPTablesRestore), the
// KUBE-SVC and KUBE-SEP chains of a Service written before and unchanged
// since are left out of the batch, which --noflush keeps as they are;
// KUBE-SERVICES is rewritten in full, as kube-proxy does.
// Two Service ports that kube-proxy's naming gives one chain are an error.
//
// The text goes into one buffer sized up front from the spec, and each
// Service's chain names are hashed once: at 30,000 Services the text is
// tens of MB, and growing and copying it was most of our own sync time.
func generate(spec *datapath.Spec, p genParams) (batch, error) {
	total := spec.Endpoints()
	large := total > largeClusterEndpointsThreshold
	if large != p.heldLarge {
		p.held = nil // every endpoint rule gains or loses its comment
	}

	var b bytes.Buffer
	b.Grow(2048 + len(spec.Services)*textPerService + total*textPerEndpoint)
	writeFilter(&b, p)

	// nat: every chain declaration first, then the rules.
	b.WriteString("*nat\n")
	for _, c := range natChains {
		chainLine(&b, c)
	}
	names, active, wrote, err := declareServices(&b, spec, p.held, total)
	if err != nil {
		return batch{}, err
	}
	stale := staleChains(p.prev, active)
	for _, c := range stale {
		chainLine(&b, c)
	}
	writeJumps(&b, "nat", p.addJumps)
	line(&b, "-A", chainPostrouting, "-m", "mark", "!", "--mark", p.mark+"/"+p.mark, "-j", "RETURN")
	line(&b, "-A", chainPostrouting, "-j", "MARK", "--xor-mark", p.mark)
	line(&b, "-A", chainPostrouting, "-m", "comment", "--comment", `"kubernetes service traffic requiring SNAT"`,
		"-j", "MASQUERADE", "--random-fully")
	line(&b, "-A", chainMarkMasq, "-j", "MARK", "--or-mark", p.mark)
	for i := range spec.Services {
		writeService(&b, &spec.Services[i], &names[i], p.clusterCIDR, large)
	}
	for _, c := range stale {
		line(&b, "-X", c)
	}
	// Tail call to the NodePorts chain; must stay last in KUBE-SERVICES.
	line(&b, "-A", chainServices, "-m", "comment",
		"--comment", `"kubernetes service nodeports; NOTE: this must be the last rule in this chain"`,
		"-m", "addrtype", "--dst-type", "LOCAL", "!", "-d", "127.0.0.0/8", "-j", chainNodePorts)
	b.WriteString("COMMIT\n")
	return batch{text: b.Bytes(), active: active, wrote: wrote, large: large}, nil
}

// writeFilter writes the filter table: empty per-Service chains (every
// Service has endpoints) and KUBE-FORWARD.
func writeFilter(b *bytes.Buffer, p genParams) {
	b.WriteString("*filter\n")
	for _, c := range filterChains {
		chainLine(b, c)
	}
	writeJumps(b, "filter", p.addJumps)
	if !p.liberal {
		line(b, "-A", chainForward, "-m", "conntrack", "--ctstate", "INVALID", "-j", "DROP")
	}
	line(b, "-A", chainForward, "-m", "comment", "--comment", `"kubernetes forwarding rules"`,
		"-m", "mark", "--mark", p.mark+"/"+p.mark, "-j", "ACCEPT")
	line(b, "-A", chainForward, "-m", "comment", "--comment", `"kubernetes forwarding conntrack rule"`,
		"-m", "conntrack", "--ctstate", "RELATED,ESTABLISHED", "-j", "ACCEPT")
	b.WriteString("COMMIT\n")
}

// declareServices names every Service's KUBE-SVC and KUBE-SEP chains and
// declares those not held unchanged (held: a partial sync's fingerprints
// by KUBE-SVC chain). It returns the names, the chains the batch leaves
// active and the fingerprint written per KUBE-SVC chain; two Service
// ports that kube-proxy's naming gives one chain are an error.
func declareServices(b *bytes.Buffer, spec *datapath.Spec, held map[string]string, total int) ([]serviceNames, map[string]bool, map[string]string, error) {
	active := make(map[string]bool, len(spec.Services)+total)
	wrote := make(map[string]string, len(spec.Services))
	names := make([]serviceNames, len(spec.Services))
	for i := range spec.Services {
		n := &names[i]
		n.of(&spec.Services[i])
		if active[n.svc] {
			// kube-proxy hashes the chain name from the port name and
			// protocol: two such Service ports would share a chain.
			for j := range i {
				if names[j].svc == n.svc {
					return nil, nil, nil, fmt.Errorf("services %s and %s have the same port name %q",
						spec.Services[j].Key(), spec.Services[i].Key(), n.name)
				}
			}
		}
		fp := fingerprint(&spec.Services[i], n)
		wrote[n.svc] = fp
		n.kept = held != nil && held[n.svc] == fp
		active[n.svc] = true
		for _, sep := range n.seps {
			active[sep] = true
		}
		if n.kept {
			continue
		}
		chainLine(b, n.svc)
		for _, sep := range n.seps {
			chainLine(b, sep)
		}
	}
	return names, active, wrote, nil
}

// staleChains are the chains of prev the batch no longer uses, sorted:
// flushed by their declaration, then deleted.
func staleChains(prev, active map[string]bool) []string {
	stale := make([]string, 0)
	for c := range prev {
		if !active[c] {
			stale = append(stale, c)
		}
	}
	sort.Strings(stale)
	return stale
}

// fingerprint is what a Service's chains are written from: its ClusterIP,
// port, protocol and endpoints in order (names are hashed from the rest).
func fingerprint(s *datapath.Service, n *serviceNames) string {
	return s.VIP.String() + " " + strconv.Itoa(int(s.Port)) + " " + string(s.Protocol) + " " + strings.Join(n.eps, ",")
}

// Text per Service and per endpoint, with kube-proxy's comments: enough
// that the buffer never grows for the lab's names.
const (
	textPerService  = 400
	textPerEndpoint = 320
)

// serviceNames are one Service port's names, computed once per sync.
type serviceNames struct {
	name string   // ServicePortName
	svc  string   // KUBE-SVC-* chain
	seps []string // KUBE-SEP-* chain per endpoint
	eps  []string // "ip:port" per endpoint
	kept bool     // a partial sync leaves its chains as the kernel holds them
}

func (n *serviceNames) of(s *datapath.Service) {
	n.name = s.ServicePortName()
	pr := proto(s)
	n.svc = svcChain(s)
	n.seps = make([]string, len(s.Endpoints))
	n.eps = make([]string, len(s.Endpoints))
	for i, ep := range s.Endpoints {
		n.eps[i] = endpointString(ep)
		n.seps[i] = prefixSEP + hash16(n.name+pr+n.eps[i])
	}
}

func writeService(b *bytes.Buffer, s *datapath.Service, n *serviceNames, clusterCIDR string, large bool) {
	pr := proto(s)
	name, sc := n.name, n.svc
	vip := s.VIP.String()
	port := strconv.Itoa(int(s.Port))
	clusterIP := `"` + name + ` cluster IP"`

	line(b, "-A", chainServices, "-m", "comment", "--comment", clusterIP,
		"-m", pr, "-p", pr, "-d", vip, "--dport", port, "-j", sc)
	if n.kept {
		return
	}
	if clusterCIDR != "" {
		line(b, "-A", sc, "-m", "comment", "--comment", clusterIP,
			"-m", pr, "-p", pr, "-d", vip, "--dport", port, "!", "-s", clusterCIDR, "-j", chainMarkMasq)
	}
	count := len(s.Endpoints)
	for i := range s.Endpoints {
		words(b, "-A", sc)
		if !large {
			b.WriteString(` -m comment --comment "`)
			b.WriteString(name)
			b.WriteString(" -> ")
			b.WriteString(n.eps[i])
			b.WriteByte('"')
		}
		if i < count-1 {
			words(b, " -m statistic --mode random --probability", probability(count-i))
		}
		line(b, " -j", n.seps[i])
	}
	for i, ep := range s.Endpoints {
		words(b, "-A", n.seps[i])
		if !large {
			words(b, " -m comment --comment", name)
		}
		line(b, " -s", ep.IP.String(), "-j", chainMarkMasq)
		words(b, "-A", n.seps[i])
		if !large {
			words(b, " -m comment --comment", name)
		}
		line(b, " -m", pr, "-p", pr, "-j DNAT --to-destination", n.eps[i])
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
