package policy

import (
	"fmt"
	"sort"
	"strings"
	"sync"
)

// Site is where the lab opens an enforcer: one per node, in the node's
// network namespace, as a CNI agent runs on every node.
type Site struct {
	Netns    string // e.g. /run/netns/cnb-x-node0
	Node     string // e.g. "node0"
	StateDir string // the lab's state directory, for files an enforcer keeps
	Prefix   string // object prefix of the lab, e.g. "cnb-x-": every chain, set, map or pin is named with it
}

// Variant is one policy enforcer as the registry knows it.
type Variant struct {
	// Name, e.g. "iptables", "nftables", "ebpf".
	Name string
	// Family: the Service datapath names (or their first word, e.g.
	// "iptables" for "iptables-legacy") this enforcer goes with, as a CNI
	// enforces policy with the mechanism its Service datapath uses.
	Family []string
	// Open opens an empty enforcer at site.
	Open func(site Site) (Enforcer, error)
}

var (
	mu       sync.RWMutex
	variants = map[string]Variant{}
)

// Register adds variants; it panics on an incomplete or repeated one, a
// programming error found at start (as datapath.Register).
func Register(vs ...Variant) {
	mu.Lock()
	defer mu.Unlock()
	for _, v := range vs {
		if v.Name == "" || v.Open == nil {
			panic(fmt.Sprintf("policy: Register: variant %q without a name or constructor", v.Name))
		}
		if _, dup := variants[v.Name]; dup {
			panic("policy: Register: " + v.Name + " registered twice")
		}
		variants[v.Name] = v
	}
}

// Lookup returns the registered enforcer called name.
func Lookup(name string) (Variant, bool) {
	mu.RLock()
	defer mu.RUnlock()
	v, ok := variants[name]
	return v, ok
}

// Names lists the registered enforcers, sorted.
func Names() []string {
	mu.RLock()
	defer mu.RUnlock()
	return namesLocked()
}

// ForDatapath picks the enforcer of a Service datapath's family: the one
// whose Family lists the datapath's name or its first word ("nftables"
// for "nftables-flat"); "" (no Service datapath) picks "iptables", as a
// plain routed cluster would run a netfilter policy agent.
func ForDatapath(serviceDatapath string) (Variant, error) {
	want := serviceDatapath
	if want == "" {
		want = "iptables"
	}
	first, _, _ := strings.Cut(want, "-")
	mu.RLock()
	defer mu.RUnlock()
	for _, v := range variants {
		for _, f := range v.Family {
			if f == want || f == first {
				return v, nil
			}
		}
	}
	return Variant{}, fmt.Errorf("no policy enforcer for Service datapath %q (registered: %s)", serviceDatapath, strings.Join(namesLocked(), ", "))
}

func namesLocked() []string {
	var n []string
	for k := range variants {
		n = append(n, k)
	}
	sort.Strings(n)
	return n
}
