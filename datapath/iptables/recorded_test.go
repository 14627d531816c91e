package iptables

import (
	"context"
	"errors"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/datapath"
	"github.com/cnibench/cnibench/lab/labtest"
)

// These run without root on iptables-save output recorded from the real
// tools (testdata/, see TestRecordSaves): the parser, Verify's counts and
// checks, and the batches Program and Close send.

// recorded is a Datapath of opts whose save tool answers saves in turn
// (file names in testdata/) and whose restore tool succeeds.
func recorded(t *testing.T, opts Options, saves ...string) (*Datapath, *labtest.Tools) {
	t.Helper()
	opts.Timeout = time.Minute
	tools := &labtest.Tools{Replies: map[string][]labtest.Reply{}}
	d := withTools(tools, opts)
	for _, f := range saves {
		tools.Replies[d.save] = append(tools.Replies[d.save], labtest.Reply{Out: labtest.ReadGolden(t, f)})
	}
	tools.Replies[d.restore+" --wait=5 --noflush --counters"] = []labtest.Reply{{}}
	return d, tools
}

func parseGolden(t *testing.T, name string) dump {
	t.Helper()
	dm, err := parseSave(labtest.ReadGolden(t, name))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return dm
}

// Each recorded dump parses into its tables, chains and rules, and count
// finds GoldenSpec's 3 Service ports and 6 endpoints where we programmed
// them, none where we did not; another tool's chains and rules (DOCKER,
// kubelet's KUBE-FIREWALL, a FORWARD accept) are read but never counted.
func TestParseRecordedSaves(t *testing.T) {
	ours := datapath.Counts{Services: 3, Endpoints: 6, Rules: 44, Chains: 18}
	for _, c := range []struct {
		file                       string
		natChains, natRules        int
		filterChains, filterRules  int
		counts                     datapath.Counts
		foreignChain, foreignTable string
	}{
		{file: "empty.save"},
		{"iptables.save", 13, 32, 5, 12, ours, "", ""},
		{"iptables-legacy.save", 13, 32, 5, 12, ours, "", ""},
		{"foreign.save", 14, 34, 6, 15, ours, "DOCKER", "nat"},
		{"foreign-after-close.save", 1, 2, 1, 3, datapath.Counts{}, "KUBE-FIREWALL", "filter"},
	} {
		t.Run(c.file, func(t *testing.T) {
			dm := parseGolden(t, c.file)
			if c.natRules == 0 {
				if len(dm) != 0 {
					t.Fatalf("tables %v in an empty dump", dm)
				}
			} else {
				for _, tc := range []struct {
					table         string
					chains, rules int
				}{{"nat", c.natChains, c.natRules}, {"filter", c.filterChains, c.filterRules}} {
					td := dm[tc.table]
					if td == nil || len(td.user) != tc.chains || len(td.rules) != tc.rules || len(td.builtin) < 3 {
						t.Fatalf("table %s: %+v, want %d user chains, %d rules and the built-in chains", tc.table, td, tc.chains, tc.rules)
					}
				}
			}
			if got := count(dm); got != c.counts {
				t.Errorf("counted %+v, want %+v", got, c.counts)
			}
			if c.foreignChain != "" && !dm[c.foreignTable].user[c.foreignChain] {
				t.Errorf("foreign chain %s/%s not read", c.foreignTable, c.foreignChain)
			}
		})
	}
}

// The recorded layout is kube-proxy's for every Service port of
// GoldenSpec, on both backends (which print matches in another order): the
// KUBE-SERVICES rule for its ClusterIP:port/proto, a service chain that
// masquerades off-cluster sources, picks its first endpoint with
// probability 1/2 and falls through to the second, and one KUBE-SEP
// chain per endpoint DNATing to it.
func TestRecordedServiceChains(t *testing.T) {
	for _, file := range []string{"iptables.save", "iptables-legacy.save"} {
		nat := parseGolden(t, file)["nat"]
		byChain := map[string][]rule{}
		for _, r := range nat.rules {
			byChain[r.chain] = append(byChain[r.chain], r)
		}
		for _, s := range labtest.GoldenSpec().Services {
			sc := svcChain(&s)
			dispatched := false
			for _, r := range byChain[chainServices] {
				dispatched = dispatched || r.target() == sc && r.opt("-d") == s.VIP.String()+"/32" &&
					r.opt("-p") == proto(&s) && r.opt("--dport") == strconv.Itoa(int(s.Port))
			}
			if !dispatched {
				t.Errorf("%s: no %s rule for %s to %s", file, chainServices, s.Key(), sc)
			}
			rs := byChain[sc]
			if len(rs) != 3 || rs[0].target() != chainMarkMasq || !rs[0].has("-s", "198.19.0.0/16") {
				t.Fatalf("%s: %s rules %v, want the masquerade rule and two endpoint rules", file, sc, rs)
			}
			p, err := strconv.ParseFloat(rs[1].opt("--probability"), 64)
			if err != nil || p != 0.5 || rs[1].target() != sepChain(&s, s.Endpoints[0]) {
				t.Errorf("%s: %s first endpoint rule %q: probability %v (%v), want 0.5 to %s", file, sc, rs[1].line, p, err, sepChain(&s, s.Endpoints[0]))
			}
			if rs[2].opt("--probability") != "" || rs[2].target() != sepChain(&s, s.Endpoints[1]) {
				t.Errorf("%s: %s last endpoint rule %q, want an unconditional jump to %s", file, sc, rs[2].line, sepChain(&s, s.Endpoints[1]))
			}
			for _, ep := range s.Endpoints {
				sep := byChain[sepChain(&s, ep)]
				if len(sep) != 2 || !sep[0].has("-s", ep.IP.String()+"/32") || sep[0].target() != chainMarkMasq ||
					sep[1].target() != "DNAT" || sep[1].opt("--to-destination") != endpointString(ep) {
					t.Errorf("%s: %s rules %v, want the hairpin mark and DNAT to %s", file, sepChain(&s, ep), sep, endpointString(ep))
				}
			}
		}
	}
}

// Verify on the recorded dumps: GoldenSpec holds (beside foreign rules
// too), and each hand edit of the dump is named by the error.
func TestVerifyOnRecordedSave(t *testing.T) {
	spec := labtest.GoldenSpec()
	web, api := &spec.Services[0], &spec.Services[1]
	for _, b := range backends {
		for _, file := range []string{b.name + ".save", "foreign.save"} {
			if b.opts.Legacy && file == "foreign.save" {
				continue // recorded with iptables-nft only
			}
			d, _ := recorded(t, b.opts, file)
			d.last = &spec
			got, err := d.Verify(context.Background())
			if err != nil || got != (datapath.Counts{Services: 3, Endpoints: 6, Rules: 44, Chains: 18}) || got != d.Expected(spec) {
				t.Errorf("%s on %s: %+v, %v", b.name, file, got, err)
			}
		}
	}
	golden := string(labtest.ReadGolden(t, "iptables.save"))
	for _, c := range []struct {
		what, drop, add string
		want            []string
	}{
		{what: "a DNAT rule", drop: "-j DNAT --to-destination 198.19.1.10:8080",
			want: []string{"default/web:http", "198.19.1.10:8080", sepChain(web, web.Endpoints[1])}},
		{what: "a dispatch rule", drop: "-A KUBE-SERVICES -d 198.18.128.11/32",
			want: []string{"default/api", "no KUBE-SERVICES rule jumping to " + svcChain(api)}},
		{what: "an endpoint jump", drop: "-j " + sepChain(api, api.Endpoints[0]),
			want: []string{svcChain(api) + " does not jump to " + sepChain(api, api.Endpoints[0])}},
		{what: "a jump from a built-in chain", drop: "-A POSTROUTING",
			want: []string{"jump from nat POSTROUTING to KUBE-POSTROUTING missing"}},
		{what: "a fixed chain", drop: ":KUBE-MARK-MASQ",
			want: []string{"nat chain KUBE-MARK-MASQ missing"}},
		{what: "nothing, one rule more", add: "-A KUBE-MARK-MASQ -j RETURN",
			want: []string{"kernel holds 3 services, 6 endpoints, 45 rules, 18 chains, want 3 services, 6 endpoints, 44 rules"}},
	} {
		var lines []string
		for _, l := range strings.Split(golden, "\n") {
			if c.drop == "" || !strings.Contains(l, c.drop) {
				lines = append(lines, l)
			}
			if c.add != "" && strings.HasPrefix(l, "-A KUBE-MARK-MASQ") {
				lines = append(lines, c.add)
			}
		}
		d, tools := recorded(t, Options{ClusterCIDR: "198.19.0.0/16"})
		tools.Replies[d.save] = []labtest.Reply{{Out: []byte(strings.Join(lines, "\n"))}}
		d.last = &spec
		_, err := d.Verify(context.Background())
		for _, w := range c.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("dropping %s: %v, want an error with %q", c.what, err, w)
			}
		}
	}
	d, _ := recorded(t, Options{}, "empty.save")
	if got, err := d.Verify(context.Background()); err != nil || got != (datapath.Counts{}) {
		t.Errorf("empty namespace, nothing programmed: %+v, %v", got, err)
	}
	d.last = &spec
	if _, err := d.Verify(context.Background()); err == nil || !strings.Contains(err.Error(), "filter chain KUBE-SERVICES missing") {
		t.Errorf("empty namespace after a Program: %v", err)
	}
}

// A dump the parser cannot read fails with one line naming the line, and
// Verify passes that on instead of counting what it misread.
func TestParseSaveMalformed(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"-A KUBE-SERVICES -j RETURN\n", `line 1: "-A KUBE-SERVICES -j RETURN" outside any table`},
		{"*nat\n:PREROUTING ACCEPT [0:0]\n-A PREROUTING -j KUBE-SERVICES\n", "table nat not closed by COMMIT (dump cut off?)"},
		{"*nat\n:KUBE-SERVICES\nCOMMIT\n", `line 2: cannot parse ":KUBE-SERVICES"`},
		{"*nat\n-A KUBE-SERVICES -m comment --comment \"open -j RETURN\nCOMMIT\n", `line 2: cannot parse "-A KUBE-SERVICES -m comment --comment \"open -j RETURN"`},
		{"*nat\n-I KUBE-SERVICES 1 -j RETURN\nCOMMIT\n", `line 2: cannot parse "-I KUBE-SERVICES 1 -j RETURN"`},
		{"*nat\n*filter\nCOMMIT\n", "line 2: table filter begins before table nat's COMMIT"},
		{"COMMIT\n", `line 1: "COMMIT" outside any table`},
	} {
		_, err := parseSave([]byte(c.in))
		if err == nil || err.Error() != c.want {
			t.Errorf("%q: %v, want %q", c.in, err, c.want)
		}
	}
	d, tools := recorded(t, Options{})
	tools.Replies[d.save] = []labtest.Reply{{Out: []byte("*nat\nbogus\nCOMMIT\n")}}
	_, err := d.Verify(context.Background())
	if want := `iptables: iptables-nft-save: line 2: cannot parse "bogus"`; err == nil || err.Error() != want {
		t.Errorf("Verify on a malformed dump: %v, want %q", err, want)
	}
	tools.Replies[d.save] = []labtest.Reply{{Err: errors.New("iptables-nft-save: exit status 1: no table")}}
	if _, err := d.Verify(context.Background()); err == nil || !strings.Contains(err.Error(), "no table") {
		t.Errorf("Verify when the tool fails: %v", err)
	}
}

// Program beside foreign rules sends one restore batch (under the
// namespace's xtables lock) with no jump already there inserted again;
// Close then removes our chains and jumps only, and keeps the tables that
// hold the other tool's rules.
func TestProgramAndCloseOnRecordedTools(t *testing.T) {
	spec := labtest.GoldenSpec()
	opts := Options{ClusterCIDR: "198.19.0.0/16", LockFile: "/run/cnb-x/xtables.lock"}
	d, tools := recorded(t, opts, "foreign.save", "foreign.save", "foreign.save", "foreign-after-close.save")
	ctx := context.Background()
	if err := d.adopt(ctx); err != nil {
		t.Fatal(err)
	}
	if !d.preTables["nat"] || !d.preTables["filter"] || len(d.prev) != 9 || len(d.haveJumps) != len(jumps) {
		t.Fatalf("adopted tables %v, %d service chains, %d jumps; want nat and filter, 9, %d", d.preTables, len(d.prev), len(d.haveJumps), len(jumps))
	}
	st, err := d.Program(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	restore := tools.Calls[len(tools.Calls)-1]
	if restore.Line != "iptables-nft-restore --wait=5 --noflush --counters" || len(restore.Env) != 1 ||
		restore.Env[0] != "XTABLES_LOCKFILE=/run/cnb-x/xtables.lock" || st.Bytes != len(restore.Stdin) {
		t.Fatalf("restore run %q env %q with %d bytes (stats %d)", restore.Line, restore.Env, len(restore.Stdin), st.Bytes)
	}
	batch := string(restore.Stdin)
	if strings.Contains(batch, "-I ") || strings.Contains(batch, "DOCKER") || strings.Contains(batch, "KUBE-FIREWALL") {
		t.Errorf("batch re-inserts jumps or touches foreign chains:\n%s", batch)
	}
	if _, err := d.Verify(ctx); err != nil {
		t.Fatal(err)
	}
	n := len(tools.Calls)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	var cleanup string
	for _, c := range tools.Calls[n:] {
		if strings.HasPrefix(c.Line, "iptables-nft-restore") {
			cleanup += string(c.Stdin)
		}
		if strings.Contains(c.Line, "delete table") {
			t.Errorf("Close ran %q on tables holding foreign rules", c.Line)
		}
	}
	for _, want := range []string{"-X KUBE-SVC-CDGGSHYLG3RE2FKL\n", "-X KUBE-MARK-MASQ\n",
		`-D PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES` + "\n"} {
		if !strings.Contains(cleanup, want) {
			t.Errorf("cleanup batch lacks %q:\n%s", want, cleanup)
		}
	}
	if strings.Contains(cleanup, "DOCKER") || strings.Contains(cleanup, "KUBE-FIREWALL") || strings.Count(cleanup, "-X ") != 18 {
		t.Errorf("cleanup batch touches foreign chains or deletes other than our 18 chains:\n%s", cleanup)
	}
	if _, err := exec.LookPath("nft"); err == nil && len(tools.Lines()) != n+3 {
		t.Errorf("Close ran %q, want save, restore, save", tools.Lines()[n:])
	}
}
