package nftables

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// listing is "nft -j list table" reduced to what Verify needs.
type listing struct {
	chains   map[string]bool
	rules    map[string][]ruleInfo // by chain
	nrules   int
	elements map[string]map[string]string // set/map -> key -> value ("" for sets)
}

// ruleInfo is what a rule does: the chains it jumps or goes to and the
// literal DNAT destinations ("ip:port") it has.
type ruleInfo struct {
	targets []string
	dnat    []string
}

// parseListing parses nft's JSON output.
func parseListing(out []byte) (*listing, error) {
	var doc struct {
		Nftables []map[string]json.RawMessage `json:"nftables"`
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		return nil, fmt.Errorf("parse nft JSON: %w", err)
	}
	l := &listing{chains: map[string]bool{}, rules: map[string][]ruleInfo{}, elements: map[string]map[string]string{}}
	for _, obj := range doc.Nftables {
		for kind, raw := range obj {
			switch kind {
			case "chain":
				var c struct{ Name string }
				if err := json.Unmarshal(raw, &c); err != nil {
					return nil, err
				}
				l.chains[c.Name] = true
			case "rule":
				var r struct {
					Chain string
					Expr  []any
				}
				if err := json.Unmarshal(raw, &r); err != nil {
					return nil, err
				}
				var ri ruleInfo
				walk(r.Expr, &ri)
				l.rules[r.Chain] = append(l.rules[r.Chain], ri)
				l.nrules++
			case "set", "map":
				var s struct {
					Name string
					Elem []any
				}
				if err := json.Unmarshal(raw, &s); err != nil {
					return nil, err
				}
				els := make(map[string]string, len(s.Elem))
				for _, e := range s.Elem {
					if kind == "map" {
						kv, ok := e.([]any)
						if !ok || len(kv) != 2 {
							return nil, fmt.Errorf("map %s: element %v", s.Name, e)
						}
						els[value(kv[0])] = value(kv[1])
					} else {
						els[value(e)] = ""
					}
				}
				l.elements[s.Name] = els
			}
		}
	}
	return l, nil
}

// walk collects goto/jump targets and literal dnat destinations.
func walk(v any, ri *ruleInfo) {
	switch x := v.(type) {
	case []any:
		for _, e := range x {
			walk(e, ri)
		}
	case map[string]any:
		for k, e := range x {
			switch k {
			case "goto", "jump":
				if m, ok := e.(map[string]any); ok {
					if t, ok := m["target"].(string); ok {
						ri.targets = append(ri.targets, t)
						continue
					}
				}
			case "dnat":
				if m, ok := e.(map[string]any); ok {
					addr, aok := m["addr"].(string)
					port, pok := m["port"].(float64)
					if aok && pok {
						ri.dnat = append(ri.dnat, fmt.Sprintf("%s:%d", addr, int(port)))
					}
				}
			}
			walk(e, ri)
		}
	}
}

// value renders a set key or map value as knftables writes one:
// concatenations joined with " . ", verdicts as "goto chain".
func value(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case float64:
		return strconv.FormatInt(int64(x), 10)
	case map[string]any:
		if c, ok := x["concat"].([]any); ok {
			parts := make([]string, len(c))
			for i, p := range c {
				parts[i] = value(p)
			}
			return strings.Join(parts, " . ")
		}
		if e, ok := x["elem"].(map[string]any); ok { // element with a comment
			return value(e["val"])
		}
		for _, verdict := range []string{"goto", "jump"} {
			if m, ok := x[verdict].(map[string]any); ok {
				return verdict + " " + fmt.Sprint(m["target"])
			}
		}
		if p, ok := x["prefix"].(map[string]any); ok {
			return fmt.Sprintf("%v/%v", p["addr"], p["len"])
		}
	}
	b, _ := json.Marshal(v)
	return string(b)
}
