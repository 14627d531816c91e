package fidelity

import (
	"bufio"
	"bytes"
	"fmt"
	"strings"
)

// ParseNFT reads `nft list table ip kube-proxy`: chains with their rules
// (base chain declarations such as "type nat hook output priority ..."
// kept as the chain's first lines; a chain's own comment line dropped) and the elements of
// every set and map.
func ParseNFT(out []byte) (*Dump, error) {
	d := &Dump{Layout: "nftables", Chains: map[string][]string{}, Elements: map[string][]string{}}
	var (
		chain, set string
		elems      strings.Builder
		inElems    bool
	)
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for n := 1; sc.Scan(); n++ {
		l := strings.TrimSpace(sc.Text())
		switch {
		case inElems:
			elems.WriteString(l)
			if strings.HasSuffix(l, "}") {
				d.Elements[set] = splitElements(elems.String())
				inElems = false
			}
		case l == "" || strings.HasPrefix(l, "comment ") || strings.HasPrefix(l, "table "):
		case strings.HasPrefix(l, "chain ") && strings.HasSuffix(l, "{"):
			chain = strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(l, "chain "), "{"))
			d.Chains[chain] = []string{}
		case (strings.HasPrefix(l, "set ") || strings.HasPrefix(l, "map ")) && strings.HasSuffix(l, "{"):
			_, rest, _ := strings.Cut(l, " ")
			set = strings.TrimSpace(strings.TrimSuffix(rest, "{"))
			d.Elements[set] = []string{}
		case l == "}":
			chain, set = "", ""
		case set != "" && strings.HasPrefix(l, "elements = {"):
			elems.Reset()
			elems.WriteString(strings.TrimPrefix(l, "elements = {"))
			if strings.HasSuffix(l, "}") {
				d.Elements[set] = splitElements(elems.String())
			} else {
				inElems = true
			}
		case set != "": // type, flags, policy: the set's declaration
		case chain != "":
			d.Chains[chain] = append(d.Chains[chain], l)
		default:
			return nil, fmt.Errorf("nft listing line %d: cannot parse %q", n, l)
		}
	}
	if inElems {
		return nil, fmt.Errorf("nft listing: elements of %s not closed", set)
	}
	return d, sc.Err()
}

// splitElements splits "a, b, c }" into its elements.
func splitElements(s string) []string {
	s = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(s), "}"))
	var out []string
	for _, e := range strings.Split(s, ",") {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	return out
}
