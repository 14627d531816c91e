package iptables

import (
	"bufio"
	"bytes"
	"strings"
)

// dump is an iptables-save output, table by table.
type dump map[string]*tableDump

// tableDump is one table: its chains in order of declaration and its rules.
type tableDump struct {
	chains  []string
	builtin map[string]string // built-in chain -> policy
	user    map[string]bool   // user-defined chains
	rules   []rule
}

// rule is one "-A chain ..." line.
type rule struct {
	chain string
	args  []string // words after "-A chain", quotes removed
	line  string
}

// target is the rule's -j argument.
func (r rule) target() string { return r.opt("-j") }

// opt returns the word after the first occurrence of flag, or "".
func (r rule) opt(flag string) string {
	for i := 0; i < len(r.args)-1; i++ {
		if r.args[i] == flag {
			return r.args[i+1]
		}
	}
	return ""
}

// has reports whether the rule's words contain flag followed by value.
func (r rule) has(flag, value string) bool {
	for i := 0; i < len(r.args)-1; i++ {
		if r.args[i] == flag && r.args[i+1] == value {
			return true
		}
	}
	return false
}

// parseSave parses iptables-save output.
func parseSave(out []byte) dump {
	d := dump{}
	var t *tableDump
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		l := sc.Text()
		switch {
		case strings.HasPrefix(l, "*"):
			t = &tableDump{builtin: map[string]string{}, user: map[string]bool{}}
			d[l[1:]] = t
		case t == nil || l == "" || strings.HasPrefix(l, "#") || l == "COMMIT":
		case strings.HasPrefix(l, ":"):
			f := strings.Fields(l[1:])
			if len(f) < 2 {
				continue
			}
			t.chains = append(t.chains, f[0])
			if f[1] == "-" {
				t.user[f[0]] = true
			} else {
				t.builtin[f[0]] = f[1]
			}
		case strings.HasPrefix(l, "-A "):
			w := splitWords(l)
			if len(w) < 2 {
				continue
			}
			t.rules = append(t.rules, rule{chain: w[1], args: w[2:], line: l})
		}
	}
	return d
}

// splitWords splits a save line into words, keeping "quoted strings" (with
// \" escapes) as one word without their quotes.
func splitWords(l string) []string {
	var out []string
	var cur strings.Builder
	inQ, have := false, false
	for i := 0; i < len(l); i++ {
		c := l[i]
		switch {
		case inQ && c == '\\' && i+1 < len(l):
			i++
			cur.WriteByte(l[i])
		case c == '"':
			inQ, have = !inQ, true
		case c == ' ' && !inQ:
			if have {
				out = append(out, cur.String())
				cur.Reset()
				have = false
			}
		default:
			cur.WriteByte(c)
			have = true
		}
	}
	if have {
		out = append(out, cur.String())
	}
	return out
}
