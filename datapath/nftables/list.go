package nftables

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"sigs.k8s.io/knftables"
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

// parseListing parses nft's JSON output. Only the objects of table ip
// kube-proxy count, so a listing of the whole ruleset reads as one of our
// table (another tool's tables may hold chains named like ours); an object
// it cannot read is an error naming it.
func parseListing(out []byte) (*listing, error) {
	var doc struct {
		Nftables []map[string]json.RawMessage `json:"nftables"`
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		return nil, fmt.Errorf("parse nft JSON: %w", err)
	}
	if doc.Nftables == nil {
		return nil, errors.New(`parse nft JSON: no "nftables" array`)
	}
	l := &listing{chains: map[string]bool{}, rules: map[string][]ruleInfo{}, elements: map[string]map[string]string{}}
	for i, obj := range doc.Nftables {
		for kind, raw := range obj {
			if err := l.add(kind, raw); err != nil {
				return nil, fmt.Errorf("parse nft JSON: object %d (%s): %w", i, kind, err)
			}
		}
	}
	return l, nil
}

// add adds one object of the listing if it is of our table.
func (l *listing) add(kind string, raw json.RawMessage) error {
	switch kind {
	case "chain", "rule", "set", "map":
	default:
		return nil // metainfo, tables, other objects Verify does not read
	}
	var o struct {
		Family, Table, Name, Chain string
		Expr                       []any
		Elem                       []any
	}
	if err := json.Unmarshal(raw, &o); err != nil {
		return err
	}
	if o.Family != string(knftables.IPv4Family) || o.Table != table {
		return nil
	}
	switch kind {
	case "chain":
		l.chains[o.Name] = true
	case "rule":
		var ri ruleInfo
		walk(o.Expr, &ri)
		l.rules[o.Chain] = append(l.rules[o.Chain], ri)
		l.nrules++
	default:
		els := make(map[string]string, len(o.Elem))
		for _, e := range o.Elem {
			if kind == "map" {
				kv, ok := e.([]any)
				if !ok || len(kv) != 2 {
					return fmt.Errorf("map %s: element %v", o.Name, e)
				}
				els[value(kv[0])] = value(kv[1])
			} else {
				els[value(e)] = ""
			}
		}
		l.elements[o.Name] = els
	}
	return nil
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
