package iptables

import (
	"bufio"
	"bytes"
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/cnibench/cnibench/lab/policy/internal/nfrule"
)

// filterDump is the part of "iptables-save -c -t filter" we read: our
// chains, the rules in them with their packet counters, and the built-in
// chains' rules that jump to ours.
type filterDump struct {
	chains map[string]bool   // our chains
	rules  map[string][]rule // by chain: ours, and built-in chains' jumps to ours
}

type rule struct {
	packets uint64
	args    []string // words after "-A chain"
}

func (r rule) opt(flag string) string {
	for i := 0; i < len(r.args)-1; i++ {
		if r.args[i] == flag {
			return r.args[i+1]
		}
	}
	return ""
}

// key is ruleKey of an allow rule of ours ("" for any other rule).
func (r rule) key() string {
	if r.opt("-j") != "RETURN" {
		return ""
	}
	set, peer := "", ""
	for i := 0; i < len(r.args)-2; i++ {
		if r.args[i] == "--match-set" {
			set, peer = r.args[i+1], r.args[i+2]
		}
	}
	if s := r.opt("-s"); s != "" {
		set, peer = s, "src"
	} else if d := r.opt("-d"); d != "" {
		set, peer = d, "dst"
	}
	ports := r.opt("--dport")
	if ports == "" {
		ports = r.opt("--dports")
	}
	return nfrule.Key(set, peer, r.opt("-p"), ports)
}

// parseFilter parses iptables-save -c output of the filter table, keeping
// the chains whose names start with ours and rules that are in them or
// jump to them. Other tools' rules are skipped unread (they may hold
// quoted comments; ours never do). A cut-off dump is an error.
func parseFilter(out []byte, ours string) (filterDump, error) {
	d := filterDump{chains: map[string]bool{}, rules: map[string][]rule{}}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	committed := false
	for n := 1; sc.Scan(); n++ {
		l := sc.Text()
		switch {
		case l == "COMMIT":
			committed = true
		case strings.HasPrefix(l, ":"+ours):
			d.chains[strings.Fields(l[1:])[0]] = true
		case strings.HasPrefix(l, "["):
			f := strings.Fields(l)
			if len(f) < 3 || f[1] != "-A" {
				return d, fmt.Errorf("line %d: cannot parse %q", n, l)
			}
			chain, args := f[2], f[3:]
			r := rule{args: args}
			if !strings.HasPrefix(chain, ours) && !strings.HasPrefix(r.opt("-j"), ours) {
				continue
			}
			c, _, ok := strings.Cut(strings.Trim(f[0], "[]"), ":")
			p, err := strconv.ParseUint(c, 10, 64)
			if !ok || err != nil {
				return d, fmt.Errorf("line %d: bad counters in %q", n, l)
			}
			r.packets = p
			d.rules[chain] = append(d.rules[chain], r)
		}
	}
	if err := sc.Err(); err != nil {
		return d, err
	}
	if !committed {
		return d, fmt.Errorf("filter table not closed by COMMIT (dump cut off?)")
	}
	return d, nil
}

// parseIpset parses "ipset save" output into our sets and their elements
// (a bare address is a /32).
func parseIpset(out []byte, ours string) (map[string]map[netip.Prefix]bool, error) {
	sets := map[string]map[netip.Prefix]bool{}
	for n, l := range strings.Split(string(out), "\n") {
		f := strings.Fields(l)
		if len(f) < 2 || !strings.HasPrefix(f[1], ours) {
			continue
		}
		switch f[0] {
		case "create":
			if sets[f[1]] == nil {
				sets[f[1]] = map[netip.Prefix]bool{}
			}
		case "add":
			if len(f) < 3 || sets[f[1]] == nil {
				return nil, fmt.Errorf("ipset save line %d: cannot parse %q", n+1, l)
			}
			p, err := netip.ParsePrefix(f[2])
			if err != nil {
				a, aerr := netip.ParseAddr(f[2])
				if aerr != nil {
					return nil, fmt.Errorf("ipset save line %d: element %q: %w", n+1, f[2], err)
				}
				p = netip.PrefixFrom(a, 32)
			}
			sets[f[1]][p] = true
		}
	}
	return sets, nil
}
