package datapath

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
)

// The registry of Service datapaths the lab can run, the way database/sql
// registers drivers: each datapath package describes its variants once
// (name, lab-name token, where it runs, how to open it, whether it goes
// through netfilter) and every call site asks the registry instead of
// keeping its own list. Package datapath/all fills it; a program that
// opens lab datapaths by name imports that package.

// Scope is where the lab runs instances of a datapath.
type Scope int

const (
	// PerNode: one instance in each node's network namespace, as
	// kube-proxy runs on every node of a cluster.
	PerNode Scope = iota
	// PerLab: one instance for the whole lab on its cgroup v2, as the
	// socket load balancer sees every pod's connect() there.
	PerLab
)

// Site is where the lab asks a constructor to open its datapath.
type Site struct {
	// Netns is the node's network namespace (PerNode), e.g.
	// /run/netns/cnb-x-node0.
	Netns string
	// Node is the node's name (PerNode), e.g. "node0".
	Node string
	// Cgroup is the lab's cgroup v2 directory (PerLab); "" when the
	// machine has no cgroup v2.
	Cgroup string
	// StateDir is the lab's own state directory, for files a datapath
	// keeps there (per-node lock files).
	StateDir string
	// ClusterCIDR holds the lab's pod addresses (kube-proxy's
	// --cluster-cidr).
	ClusterCIDR string
	// Options is the tuning of one datapath family the caller chose (the
	// lab passes ebpf.Options); a constructor ignores a type it does not
	// know and uses its defaults. Nil: defaults.
	Options any
}

// Variant is one Service datapath as the registry knows it.
type Variant struct {
	// Name as --service-datapath and scenario names spell it.
	Name string
	// Short is its token in lab names, which allow 12 characters [a-z0-9]
	// (scenario "vxlan+iptables-legacy" is lab "vxlaniptl").
	Short string
	// Netfilter: Services translate through netfilter, so each new
	// connection takes an entry of the host-wide conntrack table
	// (nf_conntrack_max), which the Service-scale sweep checks beforehand.
	Netfilter bool
	// Scope says whether Open is called once per node or once per lab.
	Scope Scope
	// Open opens an empty instance at site.
	Open func(site Site) (Datapath, error)
}

var (
	namePat  = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)
	shortPat = regexp.MustCompile(`^[a-z0-9]+$`)
)

// registry keeps variants in registration order: the order every list of
// names shows (--help, errors).
type registry struct {
	mu       sync.RWMutex
	variants []Variant
}

var reg registry

// Register adds variants, in order. It panics on a variant without a
// valid name, token or constructor, or one whose name or token is taken,
// as database/sql.Register does: a programming error found at start.
func Register(vs ...Variant) { reg.add(vs...) }

// Lookup returns the registered variant called name.
func Lookup(name string) (Variant, bool) { return reg.lookup(name) }

// Names lists the registered datapaths in registration order.
func Names() []string { return reg.names() }

// Netfilter tells whether the registered datapath name translates through
// netfilter; false for a name not registered (a cluster's "kube-proxy-…").
func Netfilter(name string) bool {
	v, ok := Lookup(name)
	return ok && v.Netfilter
}

// Choices is Names in prose, "a, b or c", for messages that suggest one.
func Choices() string { return prose(Names()) }

func prose(n []string) string {
	if len(n) < 2 {
		return strings.Join(n, "")
	}
	return strings.Join(n[:len(n)-1], ", ") + " or " + n[len(n)-1]
}

func (r *registry) add(vs ...Variant) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, v := range vs {
		if err := r.check(v); err != nil {
			panic("datapath: Register: " + err.Error())
		}
		r.variants = append(r.variants, v)
	}
}

// check says what is wrong with registering v (r locked).
func (r *registry) check(v Variant) error {
	switch {
	case !namePat.MatchString(v.Name):
		return fmt.Errorf("name %q is not [a-z0-9] words joined by -", v.Name)
	case !shortPat.MatchString(v.Short):
		return fmt.Errorf("%s: lab-name token %q is not [a-z0-9]+", v.Name, v.Short)
	case v.Open == nil:
		return fmt.Errorf("%s: no constructor", v.Name)
	case v.Scope != PerNode && v.Scope != PerLab:
		return fmt.Errorf("%s: unknown scope %d", v.Name, v.Scope)
	}
	for _, o := range r.variants {
		if o.Name == v.Name || o.Short == v.Short {
			return fmt.Errorf("%s (token %s) registered twice (as %s, token %s)", v.Name, v.Short, o.Name, o.Short)
		}
	}
	return nil
}

func (r *registry) lookup(name string) (Variant, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	for _, v := range r.variants {
		if v.Name == name {
			return v, true
		}
	}
	return Variant{}, false
}

func (r *registry) names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	n := make([]string, len(r.variants))
	for i, v := range r.variants {
		n[i] = v.Name
	}
	return n
}
