// Package iptables programs ClusterIP Services into a network namespace
// exactly as kube-proxy's iptables mode lays them out
// (pkg/proxy/iptables/proxier.go): nat KUBE-SERVICES with one rule per
// Service port jumping to KUBE-SVC-<hash>, which picks an endpoint with
// "-m statistic --mode random --probability 1/(n-i)" rules (the last one
// unconditional) and jumps to KUBE-SEP-<hash>, which marks hairpin traffic
// for masquerade and DNATs; KUBE-MARK-MASQ and KUBE-POSTROUTING masquerade
// marked packets; jumps from PREROUTING, OUTPUT and POSTROUTING; the filter
// chains (KUBE-FORWARD and the empty per-feature chains) with their jumps.
// Chain names are kube-proxy's hashes, comments its comments (dropped on
// endpoint rules above 1,000 endpoints, as its "large cluster mode" does).
//
// The per-packet cost this reproduces: the first packet of every new
// connection walks KUBE-SERVICES rule by rule, so short connections get
// slower linearly with the number of Services.
//
// A full sync is one iptables-restore --noflush run inside the namespace,
// with either the nft backend (iptables-nft-restore, name "iptables") or
// the legacy x_tables one (iptables-legacy-restore, "iptables-legacy").
//
// Differences from a running kube-proxy, none on the ClusterIP packet path:
// jump rules are inserted once by the first sync's batch rather than by
// separate "iptables -C/-I" calls; stale chains are found from the previous
// sync's state rather than from an iptables-save; no KUBE-PROXY-CANARY
// chains (kube-proxy's monitor) and no kubelet KUBE-FIREWALL chain
// (localhost NodePorts are off, as in nftables mode).
package iptables

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os/exec"
	"sync"
	"time"

	"github.com/cnibench/cnibench/datapath"
	"github.com/cnibench/cnibench/internal/kfeature"
	"github.com/cnibench/cnibench/internal/netnsx"
	"github.com/cnibench/cnibench/internal/nsexec"
)

// Datapath names, as used on the command line.
const (
	NameNFT    = "iptables"        // iptables-nft (the nf_tables kernel API)
	NameLegacy = "iptables-legacy" // iptables-legacy (the x_tables kernel API)
)

// masqMark is kube-proxy's default --iptables-masquerade-bit 14, printed as
// it prints it ("%#08x").
var masqMark = fmt.Sprintf("%#08x", 1<<14)

// Options configure a Datapath.
type Options struct {
	// Legacy selects iptables-legacy-restore/-save instead of the
	// iptables-nft binaries.
	Legacy bool `json:"legacy,omitempty"`
	// ClusterCIDR is kube-proxy's --cluster-cidr (detect-local-mode
	// ClusterCIDR): traffic to a ClusterIP from outside it is marked for
	// masquerade. The lab's pods are 198.19.0.0/16. Empty: no local-traffic
	// detector, so no such rule (kube-proxy without --cluster-cidr).
	ClusterCIDR string `json:"cluster_cidr,omitempty"`
	// Timeout bounds each tool run; default 1 hour (iptables-nft-restore
	// --noflush grows faster than quadratically: 6 minutes for 10,000
	// Services × 4 endpoints here).
	Timeout time.Duration `json:"timeout,omitempty"`
	// LockFile is the xtables lock the tools take (XTABLES_LOCKFILE).
	// The lock serialises writers of one namespace's tables, and each
	// cluster node has its own; lab nodes sharing the host's
	// /run/xtables.lock would wait for each other's syncs. Empty: the
	// tools' default, /run/xtables.lock.
	LockFile string `json:"lock_file,omitempty"`
}

// Datapath is a live kube-proxy iptables layout in one namespace.
type Datapath struct {
	mu      sync.Mutex
	ns      string
	run     nsexec.Runner // the tools, run in ns (recorded output in tests)
	opts    Options
	restore string
	save    string
	liberal bool

	preTables  map[string]bool // tables present before we touched them
	haveJumps  map[int]bool    // index in jumps
	prev       map[string]bool // KUBE-SVC/SEP chains the kernel holds from us
	last       *datapath.Spec  // the last spec programmed
	probeAgain bool

	partial   bool              // SetPartialSyncs
	held      map[string]string // after a sync: KUBE-SVC chain → fingerprint of what it holds
	heldLarge bool
}

// SetPartialSyncs implements datapath.PartialSyncer: after the next full
// sync, Program rewrites only the chains of Services that changed, as
// kube-proxy's MinimizeIPTablesRestore does; off, every sync is a full
// one (what the Service-scale sweep times).
func (d *Datapath) SetPartialSyncs(on bool) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.partial = on
	return on
}

var _ datapath.Datapath = (*Datapath)(nil)

// New returns the iptables datapath of the namespace at netnsPath (e.g.
// /run/netns/cnb-x-node0). It reads the namespace's tables (nothing is
// written until Program) and fails with an error wrapping
// errors.ErrUnsupported if the tools or the kernel's tables are missing.
// It refuses the host's own namespace.
func New(netnsPath string, opts Options) (datapath.Datapath, error) {
	d, err := newDatapath(netnsPath, opts)
	if err != nil {
		return nil, err // a nil interface, not a typed nil
	}
	return d, nil
}

func newDatapath(netnsPath string, opts Options) (*Datapath, error) {
	if err := netnsx.CheckNotHost(netnsPath); err != nil {
		return nil, fmt.Errorf("iptables: %w", err)
	}
	if opts.ClusterCIDR != "" {
		p, err := netip.ParsePrefix(opts.ClusterCIDR)
		if err != nil || !p.Addr().Is4() {
			return nil, fmt.Errorf("iptables: cluster CIDR %q is not an IPv4 prefix", opts.ClusterCIDR)
		}
		opts.ClusterCIDR = p.Masked().String()
	}
	if opts.Timeout <= 0 {
		opts.Timeout = time.Hour
	}
	d := withTools(nsexec.In(netnsPath), opts)
	d.ns = netnsPath
	for _, bin := range []string{d.restore, d.save} {
		if _, err := exec.LookPath(bin); err != nil {
			return nil, fmt.Errorf("%s: %w: %s not found (Debian package iptables)", d.Name(), errors.ErrUnsupported, bin)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), opts.Timeout)
	defer cancel()
	if err := d.probe(ctx); err != nil {
		return nil, err
	}
	if err := d.adopt(ctx); err != nil {
		return nil, err
	}
	_ = netnsx.Do(netnsPath, func() error {
		v, err := netnsx.ReadSysctl("net.netfilter.nf_conntrack_tcp_be_liberal")
		d.liberal = err == nil && v != "0"
		return nil
	})
	return d, nil
}

// withTools is a Datapath running the backend's tools through run; New
// gives it the namespace's, tests recorded output.
func withTools(run nsexec.Runner, opts Options) *Datapath {
	d := &Datapath{run: run, opts: opts, restore: "iptables-nft-restore", save: "iptables-nft-save"}
	if opts.Legacy {
		d.restore, d.save = "iptables-legacy-restore", "iptables-legacy-save"
	}
	return d
}

// adopt reads the tables the namespace holds before our first sync: which
// existed (Close removes only the ones it created) and what of ours is
// there already (learn).
func (d *Datapath) adopt(ctx context.Context) error {
	d.preTables = map[string]bool{}
	dm, err := d.dump(ctx)
	if err != nil {
		return err
	}
	for t := range dm {
		d.preTables[t] = true
	}
	d.learn(dm)
	return nil
}

// runRestore feeds text to iptables-restore --noflush in the namespace,
// under the namespace's xtables lock.
func (d *Datapath) runRestore(ctx context.Context, text []byte) ([]byte, error) {
	var env []string
	if d.opts.LockFile != "" {
		env = []string{"XTABLES_LOCKFILE=" + d.opts.LockFile}
	}
	return d.run.Run(ctx, env, text, d.restore, "--wait=5", "--noflush", "--counters")
}

// probe checks that the kernel has the tables we write, reading only.
func (d *Datapath) probe(ctx context.Context) error {
	for _, t := range []string{"nat", "filter"} {
		if _, err := d.run.Run(ctx, nil, nil, d.save, "-t", t); err != nil {
			return fmt.Errorf("%s: table %s: %w", d.Name(), t, kfeature.Check(d.save+" table "+t, err))
		}
	}
	return nil
}

// learn records which jumps and service chains the kernel already holds,
// so the next sync inserts only missing jumps and deletes leftovers.
func (d *Datapath) learn(dm dump) {
	d.haveJumps = map[int]bool{}
	for i, j := range jumps {
		if hasJump(dm, j) {
			d.haveJumps[i] = true
		}
	}
	d.prev = map[string]bool{}
	if t := dm["nat"]; t != nil {
		for c := range t.user {
			if isOurChain("nat", c) && !isFixed(c) {
				d.prev[c] = true
			}
		}
	}
}

func isFixed(c string) bool {
	for _, f := range natChains {
		if f == c {
			return true
		}
	}
	return false
}

func hasJump(dm dump, j jump) bool {
	t := dm[j.table]
	if t == nil {
		return false
	}
	for _, r := range t.rules {
		if r.chain == j.src && r.target() == j.dst && r.has("--comment", j.comment) {
			return true
		}
	}
	return false
}

// Name is "iptables" or "iptables-legacy".
func (d *Datapath) Name() string {
	if d.opts.Legacy {
		return NameLegacy
	}
	return NameNFT
}

// Program makes the namespace hold exactly spec with one iptables-restore
// --noflush batch (filter and nat), as a kube-proxy full sync does.
func (d *Datapath) Program(ctx context.Context, spec datapath.Spec) (datapath.ProgramStats, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	// Checking the spec is our own work too: it counts as Generate.
	checked := time.Now()
	// generate refuses Service ports that share a chain name.
	if err := spec.Validate(); err != nil {
		return datapath.ProgramStats{}, fmt.Errorf("%s: %w", d.Name(), err)
	}
	spec = spec.InKubeProxyOrder()
	var st datapath.ProgramStats
	st.Generate = time.Since(checked)
	ctx, cancel := context.WithTimeout(ctx, d.opts.Timeout)
	defer cancel()
	if d.probeAgain {
		t0 := time.Now()
		dm, err := d.dump(ctx)
		if err != nil {
			return st, err
		}
		d.learn(dm)
		d.probeAgain = false
		st.Apply += time.Since(t0)
	}

	t0 := time.Now()
	p := genParams{mark: masqMark, clusterCIDR: d.opts.ClusterCIDR, liberal: d.liberal, prev: d.prev}
	if d.partial {
		p.held, p.heldLarge = d.held, d.heldLarge
	}
	for i, j := range jumps {
		if !d.haveJumps[i] {
			p.addJumps = append(p.addJumps, j)
		}
	}
	b, err := generate(&spec, p)
	st.Generate += time.Since(t0)
	if err != nil {
		return st, fmt.Errorf("%s: %w", d.Name(), err)
	}
	st.Bytes = len(b.text)

	t1 := time.Now()
	_, err = d.runRestore(ctx, b.text)
	st.Apply += time.Since(t1)
	if err != nil {
		d.probeAgain = true // a table may have committed without the other
		d.held = nil        // and the next sync rewrites every chain
		return st, fmt.Errorf("%s: restore of %d Services: %w", d.Name(), len(spec.Services), err)
	}
	for i := range jumps {
		d.haveJumps[i] = true
	}
	d.prev = b.active
	// Kept after a full sync too, so the first sync after partial syncs
	// are turned on is already a partial one.
	d.held, d.heldLarge = b.wrote, b.large
	last := spec
	d.last = &last
	return st, nil
}

// Expected is what Verify should count for spec: chains and rules of ours
// in nat and filter (jump rules included), Service ports and DNAT rules.
func (d *Datapath) Expected(spec datapath.Spec) datapath.Counts {
	s, e := len(spec.Services), spec.Endpoints()
	masq := 0
	if d.opts.ClusterCIDR != "" {
		masq = 1
	}
	fwd := 3
	if d.liberal {
		fwd = 2
	}
	natRules := 3 + 3 + 1 + (s + 1) + s*masq + e + 2*e
	filterRules := 9 + fwd
	return datapath.Counts{
		Services:  s,
		Endpoints: e,
		Rules:     natRules + filterRules,
		Chains:    len(natChains) + len(filterChains) + s + e,
	}
}

// dump runs iptables-save for all tables in the namespace.
func (d *Datapath) dump(ctx context.Context) (dump, error) {
	out, err := d.run.Run(ctx, nil, nil, d.save)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", d.Name(), err)
	}
	dm, err := parseSave(out)
	if err != nil {
		return nil, fmt.Errorf("%s: %s: %w", d.Name(), d.save, err)
	}
	return dm, nil
}

// Memory reports the size of our part of the iptables-save dump: the
// declarations of our chains and every rule in them or jumping to them.
func (d *Datapath) Memory(ctx context.Context) (datapath.Memory, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, d.opts.Timeout)
	defer cancel()
	dm, err := d.dump(ctx)
	if err != nil {
		return datapath.Memory{}, err
	}
	var n int64
	for table, t := range dm {
		for c := range t.user {
			if isOurChain(table, c) {
				n += int64(len(c) + len(": - [0:0]\n"))
			}
		}
		for _, r := range t.rules {
			if isOurChain(table, r.chain) || isOurChain(table, r.target()) {
				n += int64(len(r.line) + 1)
			}
		}
	}
	return datapath.Memory{RulesetBytes: n}, nil
}
