// Package nftables programs ClusterIP Services into a network namespace
// with kube-proxy's nftables mode layout (pkg/proxy/nftables/proxier.go),
// through sigs.k8s.io/knftables as kube-proxy does, one transaction per
// full sync:
//
//   - "nftables": table ip kube-proxy; the service-ips verdict map keyed by
//     ipv4_addr . inet_proto . inet_service sends each ClusterIP:port to
//     "goto service-<hash>-ns/name/proto/port", whose rule
//     "numgen random mod N vmap { 0 : goto endpoint-..., ... }" picks one
//     endpoint chain, which masquerades hairpin traffic and DNATs; plus
//     kube-proxy's base chains at the dstnat/srcnat priorities, its
//     filter chains, mark-for-masquerade, masquerading, cluster-ips, the
//     no-endpoint and NodePort maps;
//   - "nftables-flat": the same table without per-Service or per-endpoint
//     objects, the single-map layout proposed upstream (see flat.go).
//
// The per-packet cost is one map lookup whatever the number of Services;
// the programming cost is what differs: in kube-proxy's layout every
// Service adds a chain and an anonymous map, and the kernel's transaction
// work grows faster than linearly with them.
package nftables

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cnibench/cnibench/datapath"
	"github.com/cnibench/cnibench/internal/kfeature"
	"github.com/cnibench/cnibench/internal/netnsx"
	"github.com/cnibench/cnibench/internal/nsexec"
	"sigs.k8s.io/knftables"
)

// Datapath names, as used on the command line.
const (
	NameKubeProxy = "nftables"
	NameFlat      = "nftables-flat"
)

// masqMark is kube-proxy's default masquerade bit 14, printed as it does.
var masqMark = fmt.Sprintf("%#08x", 1<<14)

// Options configure a Datapath.
type Options struct {
	// Flat selects the single-map layout ("nftables-flat").
	Flat bool `json:"flat,omitempty"`
	// ClusterCIDR is kube-proxy's local-traffic detector: ClusterIP
	// traffic from outside it is marked for masquerade. The lab's pods are
	// 198.19.0.0/16. Empty: no detector, no such rule.
	ClusterCIDR string `json:"cluster_cidr,omitempty"`
	// ServiceCIDR is the cluster's ServiceCIDR (the lab's 198.18.128.0/17):
	// kube-proxy drops traffic to its unallocated addresses. Empty: no
	// such rule.
	ServiceCIDR string `json:"service_cidr,omitempty"`
	// Timeout bounds each nft run; default 1 hour (kube-proxy's layout
	// takes minutes beyond 10,000 Services).
	Timeout time.Duration `json:"timeout,omitempty"`
}

// Datapath is a live kube-proxy nftables layout in one namespace.
type Datapath struct {
	mu     sync.Mutex
	ns     string
	run    nsexec.Runner // nft -f and listings, run in ns (recorded output in tests)
	opts   Options
	nft    knftables.Interface
	synced bool            // a sync succeeded: the table is ours
	prev   map[string]bool // per-Service chains the kernel holds from us
	last   *datapath.Spec
	// drift: a sync failed or Verify found the kernel not holding the last
	// one, so the next sync rewrites every chain (kube-proxy's full sync)
	// instead of only the changed Services'.
	drift bool
}

var _ datapath.Datapath = (*Datapath)(nil)

// New returns the nftables datapath of the namespace at netnsPath. It
// checks that nft works there and that the kernel accepts every kind of
// object the layout uses (nft --check, nothing committed), failing with
// an error wrapping errors.ErrUnsupported otherwise. It refuses the host's
// own namespace.
func New(netnsPath string, opts Options) (datapath.Datapath, error) {
	d, err := newDatapath(netnsPath, opts)
	if err != nil {
		return nil, err // a nil interface, not a typed nil
	}
	return d, nil
}

func newDatapath(netnsPath string, opts Options) (*Datapath, error) {
	d := &Datapath{ns: netnsPath, run: nsexec.In(netnsPath), opts: opts, prev: map[string]bool{}}
	if err := netnsx.CheckNotHost(netnsPath); err != nil {
		return nil, fmt.Errorf("%s: %w", d.Name(), err)
	}
	for _, c := range []*string{&d.opts.ClusterCIDR, &d.opts.ServiceCIDR} {
		if *c == "" {
			continue
		}
		p, err := netip.ParsePrefix(*c)
		if err != nil || !p.Addr().Is4() {
			return nil, fmt.Errorf("%s: %q is not an IPv4 prefix", d.Name(), *c)
		}
		*c = p.Masked().String()
	}
	if d.opts.Timeout <= 0 {
		d.opts.Timeout = time.Hour
	}
	if _, err := exec.LookPath("nft"); err != nil {
		return nil, fmt.Errorf("%s: %w: nft not found (Debian package nftables)", d.Name(), errors.ErrUnsupported)
	}
	err := netnsx.Do(netnsPath, func() error {
		var err error
		d.nft, err = knftables.New(knftables.IPv4Family, table)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", d.Name(), &kfeature.Unsupported{Feature: "nftables", Detail: kfeature.Detail(err), Err: err})
	}
	if err := d.probe(); err != nil {
		return nil, err
	}
	return d, nil
}

// probe asks the kernel (nft --check: nothing is committed) for every
// kind of object and statement the layouts use, with a fixed sample
// independent of the layout code, so a failure means the kernel or nft
// lacks a feature, never that our generated layout is wrong (that fails
// in Program).
func (d *Datapath) probe() error {
	tx := d.nft.NewTransaction()
	tx.Add(&knftables.Table{})
	tx.Add(&knftables.Chain{Name: "nat", Type: knftables.PtrTo(knftables.NATType),
		Hook: knftables.PtrTo(knftables.PreroutingHook), Priority: knftables.PtrTo(knftables.DNATPriority)})
	tx.Add(&knftables.Chain{Name: "post", Type: knftables.PtrTo(knftables.NATType),
		Hook: knftables.PtrTo(knftables.PostroutingHook), Priority: knftables.PtrTo(knftables.SNATPriority)})
	tx.Add(&knftables.Chain{Name: "filter", Type: knftables.PtrTo(knftables.FilterType),
		Hook: knftables.PtrTo(knftables.ForwardHook), Priority: knftables.PtrTo(knftables.DNATPriority + "-10")})
	tx.Add(&knftables.Chain{Name: "ep"})
	tx.Add(&knftables.Map{Name: "vm", Type: "ipv4_addr . inet_proto . inet_service : verdict"})
	tx.Add(&knftables.Map{Name: "np", Type: "inet_proto . inet_service : verdict"})
	tx.Add(&knftables.Map{Name: "eps", TypeOf: "ip daddr . tcp dport . numgen random mod 1 : ip daddr . tcp dport"})
	tx.Add(&knftables.Set{Name: "pairs", Type: "ipv4_addr . ipv4_addr"})
	tx.Add(&knftables.Element{Map: "vm", Key: []string{"198.18.128.1", "tcp", "80"}, Value: []string{"goto ep"}})
	tx.Add(&knftables.Element{Map: "eps", Key: []string{"198.18.128.1", "80", "0"}, Value: []string{"198.19.240.1", "80"}})
	for _, r := range []struct{ chain, rule string }{
		{"nat", "ip daddr . meta l4proto . th dport vmap @vm"},
		{"nat", "fib daddr type local ip daddr != 127.0.0.0/8 meta l4proto . th dport vmap @np"},
		{"nat", "numgen random mod 2 vmap { 0 : goto ep , 1 : goto ep }"},
		{"nat", "meta l4proto tcp dnat ip addr . port to ip daddr . tcp dport . numgen random mod 1 map @eps"},
		{"ep", "ip saddr 198.19.240.1 mark set mark or 0x4000"},
		{"ep", "meta l4proto tcp dnat to 198.19.240.1:80"},
		{"post", "ct status dnat ip saddr . ip daddr @pairs mark set mark xor 0x4000"},
		{"post", "mark and 0x4000 == 0 return"},
		{"post", "masquerade fully-random"},
		{"filter", "ct state new ip daddr { 198.18.128.0/17 } reject"},
	} {
		tx.Add(&knftables.Rule{Chain: r.chain, Rule: r.rule})
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := netnsx.Do(d.ns, func() error { return d.nft.Check(ctx, tx) })
	if err != nil {
		// The sample is fixed and known good: a refusal (ENOENT for an
		// expression without its module, EOPNOTSUPP) is a missing feature.
		return fmt.Errorf("%s: %w", d.Name(), &kfeature.Unsupported{Feature: "nftables expressions of the " + d.Name() + " layout",
			Detail: kfeature.Detail(err), Err: err})
	}
	return nil
}

// Name is "nftables" or "nftables-flat".
func (d *Datapath) Name() string {
	if d.opts.Flat {
		return NameFlat
	}
	return NameKubeProxy
}

// transaction builds the full sync of spec and returns it with the chains
// it creates. Chains of an earlier sync that spec no longer needs are
// flushed and deleted in the same transaction.
// render is the whole sync as nft text: the transaction, then (flat
// layout) the elements written directly. The chains the sync creates are
// returned too.
func (d *Datapath) render(spec *datapath.Spec, first bool) ([]byte, map[string]bool) {
	tx, created, elements := d.transaction(spec, first)
	text := tx.String()
	b := make([]byte, 0, len(text)+len(elements))
	return append(append(b, text...), elements...), created
}

// transaction builds the sync; for the flat layout, the Services'
// elements come back as text to append (see flatServices).
func (d *Datapath) transaction(spec *datapath.Spec, first bool) (*knftables.Transaction, map[string]bool, []byte) {
	var elements []byte
	tx := d.nft.NewTransaction()
	created := map[string]bool{}
	p := syncParams{mark: masqMark, clusterCIDR: d.opts.ClusterCIDR, serviceCIDR: d.opts.ServiceCIDR,
		first: first, flat: d.opts.Flat}
	setup(tx, p, created)
	if d.opts.Flat {
		elements = flatServices(tx, spec, p, created)
	} else {
		// kube-proxy's partial sync: the sets and maps are rebuilt every
		// time, but the chains of a Service that did not change since the
		// last successful sync are left as they are (rewriting them
		// re-creates every anonymous numgen map, which costs the kernel
		// time proportional to the sets already in the table).
		unchanged := d.unchanged(spec, first)
		for i := range spec.Services {
			writeService(tx, &spec.Services[i], p, created, unchanged[spec.Services[i].Key()])
		}
	}
	if !first {
		// Flush every stale chain before deleting any: a stale service
		// chain's numgen map still refers to stale endpoint chains.
		var stale []string
		for c := range d.prev {
			if !created[c] {
				stale = append(stale, c)
				tx.Flush(&knftables.Chain{Name: c})
			}
		}
		for _, c := range stale {
			tx.Delete(&knftables.Chain{Name: c})
		}
	}
	return tx, created, elements
}

// unchanged names the Services of spec that the last successful sync
// programmed exactly alike (same address, port, protocol and endpoints in
// the same order, which the numgen map's indexes depend on); none on a
// first sync.
func (d *Datapath) unchanged(spec *datapath.Spec, first bool) map[string]bool {
	same := map[string]bool{}
	if first || d.drift || d.last == nil {
		return same
	}
	before := make(map[string]*datapath.Service, len(d.last.Services))
	for i := range d.last.Services {
		before[d.last.Services[i].Key()] = &d.last.Services[i]
	}
	for i := range spec.Services {
		s := &spec.Services[i]
		if b := before[s.Key()]; b != nil && sameService(b, s) {
			same[s.Key()] = true
		}
	}
	return same
}

func sameService(a, b *datapath.Service) bool {
	return a.VIP == b.VIP && a.Port == b.Port && a.Protocol == b.Protocol && slices.Equal(a.Endpoints, b.Endpoints)
}

// isServiceChain reports whether a chain belongs to a Service (kube-proxy:
// names with a "/") or to the flat layout's endpoint counts.
func isServiceChain(c string) bool { return strings.Contains(c, "/") || strings.HasPrefix(c, lbPrefix) }

// Program makes the namespace hold exactly spec in one nft transaction.
func (d *Datapath) Program(ctx context.Context, spec datapath.Spec) (datapath.ProgramStats, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var st datapath.ProgramStats
	// Generate is all of our side: checking the spec, building the
	// knftables transaction and writing it out as nft text (what
	// knftables' Run would do before exec); Apply is nft -f alone.
	t0 := time.Now()
	if err := d.checkSpec(&spec); err != nil {
		return st, fmt.Errorf("%s: %w", d.Name(), err)
	}
	spec = spec.InKubeProxyOrder()
	ctx, cancel := context.WithTimeout(ctx, d.opts.Timeout)
	defer cancel()
	text, created := d.render(&spec, !d.synced)
	st.Generate = time.Since(t0)
	st.Bytes = len(text)
	// tx.String() appends a comment when building the transaction failed
	// (knftables' Run would return that error): nft must never apply it.
	if i := bytes.LastIndex(text, []byte("# ERROR: ")); i >= 0 {
		return st, fmt.Errorf("%s: transaction of %d Services: %s", d.Name(), len(spec.Services), bytes.TrimSpace(text[i+len("# ERROR: "):]))
	}

	t1 := time.Now()
	_, err := d.run.Run(ctx, nil, text, "nft", "-f", "-")
	st.Apply = time.Since(t1)
	if err != nil {
		d.drift = true
		return st, fmt.Errorf("%s: transaction of %d Services: %w", d.Name(), len(spec.Services), err)
	}
	d.synced, d.drift = true, false
	d.prev = map[string]bool{}
	for c := range created {
		if isServiceChain(c) {
			d.prev[c] = true
		}
	}
	last := spec
	d.last = &last
	return st, nil
}

// checkSpec validates spec (datapath.Spec.Validate) and, for kube-proxy's
// layout, refuses two Service ports that its naming gives one chain (the
// flat layout has no per-Service chains).
func (d *Datapath) checkSpec(spec *datapath.Spec) error {
	if err := spec.Validate(); err != nil {
		return err
	}
	if d.opts.Flat {
		return nil
	}
	return datapath.UniqueNames(spec, serviceChain)
}

// fixedRules counts the rules every sync writes besides the Services'.
func (d *Datapath) fixedRules() int {
	n := len(jumpChains) + 1 /* mark-for-masquerade */ + 3 /* masquerading */ + 1 /* cluster-ips-check */ +
		1 /* reject-chain */ + 1 /* service-endpoints-check */ + 1 /* nodeport-endpoints-check */ +
		1 /* firewall-check */ + 2 /* services */
	if d.opts.ServiceCIDR != "" {
		n++
	}
	if d.opts.Flat {
		n++ // hairpin check in masquerading
	}
	return n
}

// Expected is what Verify should count for spec: chains, rules and named
// set/map elements in table ip kube-proxy, Service ports in service-ips
// and endpoints (endpoint chains with their DNAT, or endpoints-<proto>
// elements in the flat layout).
func (d *Datapath) Expected(spec datapath.Spec) datapath.Counts {
	s, e := len(spec.Services), spec.Endpoints()
	masq := 0
	if d.opts.ClusterCIDR != "" {
		masq = 1
	}
	vips, epIPs, counts := map[netip.Addr]bool{}, map[netip.Addr]bool{}, map[int]bool{}
	for _, svc := range spec.Services {
		vips[svc.VIP] = true
		counts[len(svc.Endpoints)] = true
		for _, ep := range svc.Endpoints {
			epIPs[ep.IP] = true
		}
	}
	c := datapath.Counts{Services: s, Endpoints: e}
	fixed := len(baseChains) + len(fixedChains)
	if d.opts.Flat {
		c.Chains = fixed + len(counts)
		c.Rules = d.fixedRules() + len(counts)*(masq+len(flatProtos))
		c.Elements = len(vips) + s + e + len(epIPs)
		return c
	}
	c.Chains = fixed + s + e
	c.Rules = d.fixedRules() + s*(masq+1) + 2*e
	c.Elements = len(vips) + s
	return c
}

// Memory reports the size of "nft list table ip kube-proxy".
func (d *Datapath) Memory(ctx context.Context) (datapath.Memory, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, d.opts.Timeout)
	defer cancel()
	out, err := d.run.Run(ctx, nil, nil, "nft", "list", "table", "ip", table)
	if err != nil {
		if strings.Contains(err.Error(), "No such file or directory") {
			return datapath.Memory{}, nil
		}
		return datapath.Memory{}, fmt.Errorf("%s: %w", d.Name(), err)
	}
	return datapath.Memory{RulesetBytes: int64(len(out))}, nil
}

// Close deletes table ip kube-proxy, as kube-proxy's CleanupLeftovers
// does. Idempotent.
func (d *Datapath) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), d.opts.Timeout)
	defer cancel()
	tx := d.nft.NewTransaction()
	tx.Delete(&knftables.Table{})
	err := netnsx.Do(d.ns, func() error { return d.nft.Run(ctx, tx) })
	if err != nil && !knftables.IsNotFound(err) {
		return fmt.Errorf("%s: delete table: %w", d.Name(), err)
	}
	d.synced, d.prev, d.last = false, map[string]bool{}, nil
	return nil
}

// SetPartialSyncs implements datapath.PartialSyncer: the kube-proxy layout
// always syncs partially (the chains of unchanged Services are kept), the
// flat layout never does (its one map is rewritten on every sync).
func (d *Datapath) SetPartialSyncs(bool) bool { return !d.opts.Flat }
