package l7proxy

import "testing"

// TestUndoBatch: only what the deployment created and is empty now goes;
// the table only when it was not there before and nothing is left in it.
func TestUndoBatch(t *testing.T) {
	content := func(others int, chains map[string]int) natContent {
		return natContent{table: true, chains: chains, others: others}
	}
	for _, c := range []struct {
		name   string
		before natState
		now    natContent
		want   string
	}{
		{"created table and chain", natState{}, content(0, map[string]int{"OUTPUT": 0}),
			"delete chain ip nat OUTPUT\ndelete table ip nat\n"},
		{"chain someone filled since", natState{}, content(0, map[string]int{"OUTPUT": 0, "PREROUTING": 2}),
			"delete chain ip nat OUTPUT\n"},
		{"a set in the table", natState{}, content(1, map[string]int{"OUTPUT": 0}),
			"delete chain ip nat OUTPUT\n"},
		{"table was there", natState{Table: true}, content(0, map[string]int{"OUTPUT": 0}),
			"delete chain ip nat OUTPUT\n"},
		{"chain was there", natState{Table: true, Chains: []string{"OUTPUT"}}, content(0, map[string]int{"OUTPUT": 0}), ""},
		{"no table now", natState{}, natContent{}, ""},
	} {
		if got := undoBatch(c.before, c.now); got != c.want {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
	}
}

// TestParseNft reads the objects of an iptables-nft nat table as nft 1.0
// lists them.
func TestParseNft(t *testing.T) {
	js := `{"nftables": [{"metainfo": {"version": "1.0.6", "json_schema_version": 1}},
	{"table": {"family": "ip", "name": "nat", "handle": 1}},
	{"chain": {"family": "ip", "table": "nat", "name": "OUTPUT", "handle": 1, "type": "nat", "hook": "output", "prio": -100, "policy": "accept"}},
	{"chain": {"family": "ip", "table": "nat", "name": "PREROUTING", "handle": 3}},
	{"rule": {"family": "ip", "table": "nat", "chain": "OUTPUT", "handle": 2, "expr": []}},
	{"set": {"family": "ip", "table": "nat", "name": "s", "type": "ipv4_addr"}}]}`
	objs, err := parseNft([]byte(js))
	if err != nil {
		t.Fatal(err)
	}
	c := natFrom(objs)
	if !c.table || c.others != 1 || len(c.chains) != 2 || c.chains["OUTPUT"] != 1 || c.chains["PREROUTING"] != 0 {
		t.Errorf("got %+v", c)
	}
	if s := c.state(); !s.Table || len(s.Chains) != 2 || s.Chains[0] != "OUTPUT" {
		t.Errorf("state %+v", s)
	}
	if _, err := parseNft([]byte("not json")); err == nil {
		t.Error("bad JSON: want an error")
	}
}
