package fidelity

import (
	"sort"
	"strings"
)

// Dump is one node's Service ruleset as text: chains with their rules in
// order, and (nftables) the elements of each set and map.
type Dump struct {
	// Layout is "iptables" or "nftables".
	Layout string
	// Chains maps a chain ("nat/KUBE-SVC-X" for iptables, "service-X" for
	// nftables) to its rules, each as the tool printed it without the
	// chain name and counters.
	Chains map[string][]string
	// Elements maps an nftables set or map to its elements as printed
	// ("198.18.0.1 . tcp . 80 : goto service-X"). Empty for iptables.
	Elements map[string][]string
}

// perService reports whether chain belongs to one Service port or
// endpoint (its name is hashed from one), not to the shared layout.
func (d *Dump) perService(chain string) bool {
	name := chain
	if i := strings.IndexByte(chain, '/'); d.Layout == "iptables" && i >= 0 {
		name = chain[i+1:]
	} else if d.Layout == "nftables" && i < 0 {
		// kube-proxy's nftables names per-Service chains
		// "service-HASH-namespace/name/proto/port": shared chains such as
		// service-endpoints-check have no "/".
		return false
	}
	for _, p := range perServicePrefixes[d.Layout] {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// perServicePrefixes are kube-proxy's per-Service and per-endpoint chain
// name prefixes (pkg/proxy/iptables and pkg/proxy/nftables).
var perServicePrefixes = map[string][]string{
	"iptables": {"KUBE-SVC-", "KUBE-SVL-", "KUBE-SEP-", "KUBE-EXT-", "KUBE-FW-"},
	"nftables": {"service-", "endpoint-", "external-", "firewall-"},
}

// targets returns the chains a rule jumps or goes to.
func targets(layout, rule string) []string {
	f := strings.Fields(rule)
	var out []string
	for i := 0; i < len(f)-1; i++ {
		switch {
		case layout == "iptables" && (f[i] == "-j" || f[i] == "-g"):
			out = append(out, f[i+1])
		case layout == "nftables" && (f[i] == "goto" || f[i] == "jump"):
			out = append(out, strings.TrimRight(f[i+1], ",}"))
		}
	}
	return out
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
