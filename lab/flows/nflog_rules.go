package flows

import (
	"fmt"
	"regexp"
	"strings"
)

// The NFLOG mechanism's rules: one nft table of ours in the node
// namespace (family ip), a base chain on the forward hook at priority 10,
// after the filter chains (iptables-nft's and the policy tables', at 0),
// so a packet they drop is not logged and a logged packet was forwarded.
// Every pod flow crosses the node's forward hook (pod to pod on the node,
// pod to eth0), once per node, so no per-veth hooks are needed:
//
//   - packets neither from nor to an observed veth return;
//   - "ct state new" logs a flow's first packet (TCP SYN, UDP first
//     packet): Calico's flow logs and iptables' --ctstate NEW;
//   - a TCP packet with FIN or RST is logged too, as the eBPF
//     mechanism does (Hubble's "medium" aggregation).
//
// Each log copies snaplen bytes (IPv4 + TCP/UDP headers) to the group,
// which batches them (nflog_msg.go: modeMsg).

// nflogSnaplen covers an IPv4 header with options (60) and the first 14
// bytes of TCP (up to its flags).
const nflogSnaplen = 80

// nflogPrio is our chain's priority on the forward hook (filter is 0).
const nflogPrio = 10

var nftName = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)

// tableName is the nft table of a lab: <prefix>flows.
func tableName(prefix string) string { return prefix + "flows" }

// nflogRules renders the nft script that creates our table (replacing
// an earlier one of the same name).
func nflogRules(prefix string, group uint16, ifaces []string) (string, error) {
	t := tableName(prefix)
	if !nftName.MatchString(t) {
		return "", fmt.Errorf("flows: prefix %q makes a bad nft table name", prefix)
	}
	set := `"` + podVethPrefix + `*"`
	if len(ifaces) > 0 {
		q := make([]string, len(ifaces))
		for i, n := range ifaces {
			if !nftName.MatchString(n) {
				return "", fmt.Errorf("flows: bad interface name %q", n)
			}
			q[i] = `"` + n + `"`
		}
		set = "{ " + strings.Join(q, ", ") + " }"
	}
	log := fmt.Sprintf("log group %d snaplen %d", group, nflogSnaplen)
	var b strings.Builder
	fmt.Fprintf(&b, "table ip %s\ndelete table ip %s\n", t, t)
	fmt.Fprintf(&b, "table ip %s {\n", t)
	fmt.Fprintf(&b, "\tchain forward {\n\t\ttype filter hook forward priority %d; policy accept;\n", nflogPrio)
	fmt.Fprintf(&b, "\t\tiifname != %s oifname != %s return\n", set, set)
	fmt.Fprintf(&b, "\t\tct state new %s\n", log)
	fmt.Fprintf(&b, "\t\ttcp flags & (fin | rst) != 0 %s\n", log)
	b.WriteString("\t}\n}\n")
	return b.String(), nil
}
