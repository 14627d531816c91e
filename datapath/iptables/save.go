package iptables

import (
	"bufio"
	"bytes"
	"fmt"
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

// parseSave parses iptables-save output. A line it cannot read, a rule
// outside a table or a table not closed by COMMIT (a cut-off dump) is an
// error naming the line: Verify must never count a dump it misread.
func parseSave(out []byte) (dump, error) {
	d := dump{}
	var t *tableDump
	table := ""
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		l := sc.Text()
		bad := func() (dump, error) { return nil, fmt.Errorf("line %d: cannot parse %q", n, l) }
		switch {
		case l == "" || strings.HasPrefix(l, "#"):
		case strings.HasPrefix(l, "*"):
			if t != nil {
				return nil, fmt.Errorf("line %d: table %s begins before table %s's COMMIT", n, l[1:], table)
			}
			table = l[1:]
			t = &tableDump{builtin: map[string]string{}, user: map[string]bool{}}
			d[table] = t
		case t == nil:
			return nil, fmt.Errorf("line %d: %q outside any table", n, l)
		case l == "COMMIT":
			t = nil
		case strings.HasPrefix(l, ":"):
			f := strings.Fields(l[1:])
			if len(f) < 2 {
				return bad()
			}
			t.chains = append(t.chains, f[0])
			if f[1] == "-" {
				t.user[f[0]] = true
			} else {
				t.builtin[f[0]] = f[1]
			}
		case strings.HasPrefix(l, "-A "):
			w, ok := splitWords(l)
			if !ok || len(w) < 2 {
				return bad()
			}
			t.rules = append(t.rules, rule{chain: w[1], args: w[2:], line: l})
		default:
			return bad()
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if t != nil {
		return nil, fmt.Errorf("table %s not closed by COMMIT (dump cut off?)", table)
	}
	return d, nil
}

// splitWords splits a save line into words, keeping "quoted strings" (with
// \" escapes) as one word without their quotes; false when a quote is not
// closed.
func splitWords(l string) ([]string, bool) {
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
	return out, !inQ
}
