package fidelity

import (
	"bufio"
	"bytes"
	"fmt"
	"strings"
)

// ParseIPTablesSave reads iptables-save output. Only kube-proxy's chains
// (KUBE-*) are kept, and of the built-in chains only the rules that jump
// to one: other tools' rules (a CNI plugin's, Docker's) are not the
// datapath's.
func ParseIPTablesSave(out []byte) (*Dump, error) {
	d := &Dump{Layout: "iptables", Chains: map[string][]string{}}
	table := ""
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		l := sc.Text()
		switch {
		case l == "" || strings.HasPrefix(l, "#") || l == "COMMIT":
		case strings.HasPrefix(l, "*"):
			table = l[1:]
		case table == "":
			return nil, fmt.Errorf("iptables-save line %d: %q before any table", n, l)
		case strings.HasPrefix(l, ":"):
			name, _, _ := strings.Cut(l[1:], " ")
			if strings.HasPrefix(name, "KUBE-") {
				d.Chains[table+"/"+name] = d.Chains[table+"/"+name][:0:0]
			}
		case strings.HasPrefix(l, "-A "):
			chain, rule, _ := strings.Cut(l[3:], " ")
			if !strings.HasPrefix(chain, "KUBE-") && !jumpsToKube(rule) {
				continue
			}
			key := table + "/" + chain
			d.Chains[key] = append(d.Chains[key], rule)
		default:
			return nil, fmt.Errorf("iptables-save line %d: cannot parse %q", n, l)
		}
	}
	return d, sc.Err()
}

func jumpsToKube(rule string) bool {
	for _, t := range targets("iptables", rule) {
		if strings.HasPrefix(t, "KUBE-") {
			return true
		}
	}
	return false
}
