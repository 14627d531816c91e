package nftables

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"sort"
	"strconv"
	"strings"

	"github.com/cnibench/cnibench/lab/policy"
	"github.com/cnibench/cnibench/lab/policy/internal/nfrule"
)

// listing is "nft -j list table ip <ours>" reduced to what Verify needs.
type listing struct {
	view      nfrule.View
	base      bool           // the base chain, hooked at forward
	ctAccept  bool           // its established-flows rule
	counter   bool           // the drops counter exists
	packets   uint64         // its packets
	dropRules map[string]int // pod chain -> counted drop rules
	chains    int            // every chain of the table
	elements  int            // every set element of the table
}

// rule is one rule's expressions, as far as ours use them.
type ruleInfo struct {
	peers, side, proto string
	ports              []int
	iif, oif           string
	verdict, target    string
	counter            string
	ct                 bool
}

// parseListing parses nft's JSON listing of our table. Objects of other
// tables are ignored; an object of ours it cannot read is an error.
func parseListing(out []byte, table string) (*listing, error) {
	var doc struct {
		Nftables []map[string]json.RawMessage `json:"nftables"`
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		return nil, fmt.Errorf("parse nft JSON: %w", err)
	}
	if doc.Nftables == nil {
		return nil, errors.New(`parse nft JSON: no "nftables" array`)
	}
	l := &listing{view: nfrule.NewView(), dropRules: map[string]int{}}
	for i, obj := range doc.Nftables {
		for kind, raw := range obj {
			if err := l.add(kind, raw, table); err != nil {
				return nil, fmt.Errorf("parse nft JSON: object %d (%s): %w", i, kind, err)
			}
		}
	}
	return l, nil
}

func (l *listing) add(kind string, raw json.RawMessage, table string) error {
	var o struct {
		Family, Table, Name, Chain, Hook string
		Packets                          uint64
		Elem                             []json.RawMessage
		Expr                             []map[string]json.RawMessage
	}
	if kind == "metainfo" || kind == "table" {
		return nil
	}
	if err := json.Unmarshal(raw, &o); err != nil {
		return err
	}
	if o.Family != "ip" || o.Table != table {
		return nil
	}
	switch kind {
	case "chain":
		l.chains++
		if o.Name == baseChain {
			l.base = o.Hook == "forward"
		} else {
			l.view.Chains[o.Name] = true
		}
	case "counter":
		if o.Name == drops {
			l.counter, l.packets = true, o.Packets
		}
	case "set":
		els := map[netip.Prefix]bool{}
		for _, e := range o.Elem {
			p, err := prefixOf(e)
			if err != nil {
				return fmt.Errorf("set %s: %w", o.Name, err)
			}
			els[p] = true
		}
		l.view.Sets[o.Name] = els
		l.elements += len(els)
	case "rule":
		r, err := parseRule(o.Expr)
		if err != nil {
			return fmt.Errorf("rule in chain %s: %w", o.Chain, err)
		}
		l.addRule(o.Chain, r)
	}
	return nil
}

// addRule files a rule: the base chain's dispatch and established-flows
// rules, a pod chain's allows and counted drop.
func (l *listing) addRule(chain string, r ruleInfo) {
	dirs := nfrule.Dirs(policy.PodPolicy{})
	switch {
	case chain == baseChain && r.ct && r.verdict == "accept":
		l.ctAccept = true
	case chain == baseChain && r.verdict == "jump" && r.oif != "":
		l.view.Dispatch[nfrule.DispatchKey(dirs[0], r.oif, r.target)] = true
	case chain == baseChain && r.verdict == "jump" && r.iif != "":
		l.view.Dispatch[nfrule.DispatchKey(dirs[1], r.iif, r.target)] = true
	case r.verdict == "return":
		ports := make([]string, len(r.ports))
		sort.Ints(r.ports)
		for i, p := range r.ports {
			ports[i] = strconv.Itoa(p)
		}
		l.view.AddAllow(chain, nfrule.Key(r.peers, r.side, r.proto, strings.Join(ports, ",")), r.String())
	case r.verdict == "drop" && r.counter == drops:
		l.dropRules[chain]++
	}
}

func (r ruleInfo) String() string {
	return fmt.Sprintf("ip %s %s %s dport %v %s", r.side, r.peers, r.proto, r.ports, r.verdict)
}

// parseRule reads the expressions our rules are made of; others are
// skipped (they leave the rule unexplained, which Verify reports).
func parseRule(exprs []map[string]json.RawMessage) (ruleInfo, error) {
	var r ruleInfo
	for _, ex := range exprs {
		for k, v := range ex {
			switch k {
			case "match":
				if err := r.match(v); err != nil {
					return r, err
				}
			case "jump", "goto":
				var t struct{ Target string }
				if err := json.Unmarshal(v, &t); err != nil {
					return r, err
				}
				r.verdict, r.target = k, t.Target
			case "return", "drop", "accept":
				r.verdict = k
			case "counter":
				_ = json.Unmarshal(v, &r.counter) // a named counter is its name; an anonymous one an object
			}
		}
	}
	return r, nil
}

func (r *ruleInfo) match(raw json.RawMessage) error {
	var m struct {
		Left struct {
			Payload *struct{ Protocol, Field string }
			Meta    *struct{ Key string }
			Ct      *struct{ Key string }
		}
		Right json.RawMessage
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return err
	}
	var s string
	_ = json.Unmarshal(m.Right, &s)
	switch {
	case m.Left.Ct != nil && m.Left.Ct.Key == "state":
		r.ct = true
	case m.Left.Meta != nil && m.Left.Meta.Key == "l4proto":
		r.proto = s
	case m.Left.Meta != nil && m.Left.Meta.Key == "oifname":
		r.oif = s
	case m.Left.Meta != nil && m.Left.Meta.Key == "iifname":
		r.iif = s
	case m.Left.Payload != nil && m.Left.Payload.Protocol == "ip" && (m.Left.Payload.Field == "saddr" || m.Left.Payload.Field == "daddr"):
		r.side = map[string]string{"saddr": "src", "daddr": "dst"}[m.Left.Payload.Field]
		if name, ok := strings.CutPrefix(s, "@"); ok {
			r.peers = name
			return nil
		}
		p, err := prefixOf(m.Right)
		if err != nil {
			return err
		}
		r.peers = p.String()
	case m.Left.Payload != nil && m.Left.Payload.Field == "dport":
		r.proto = m.Left.Payload.Protocol
		var one int
		var set struct{ Set []int }
		if json.Unmarshal(m.Right, &one) == nil {
			r.ports = []int{one}
		} else if err := json.Unmarshal(m.Right, &set); err == nil {
			r.ports = set.Set
		} else {
			return fmt.Errorf("ports %s: %w", m.Right, err)
		}
	}
	return nil
}

// prefixOf reads an address ("10.0.0.1", a /32) or {"prefix": {"addr",
// "len"}}.
func prefixOf(raw json.RawMessage) (netip.Prefix, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		a, err := netip.ParseAddr(s)
		if err != nil {
			return netip.Prefix{}, err
		}
		return netip.PrefixFrom(a, a.BitLen()), nil
	}
	var p struct {
		Prefix *struct {
			Addr string
			Len  int
		}
	}
	if err := json.Unmarshal(raw, &p); err != nil || p.Prefix == nil {
		return netip.Prefix{}, fmt.Errorf("element %s is neither an address nor a prefix", raw)
	}
	a, err := netip.ParseAddr(p.Prefix.Addr)
	if err != nil {
		return netip.Prefix{}, err
	}
	return netip.PrefixFrom(a, p.Prefix.Len), nil
}
