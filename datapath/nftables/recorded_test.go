package nftables

import (
	"context"
	"encoding/json"
	"errors"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/knftables"

	"github.com/cnibench/cnibench/datapath"
	"github.com/cnibench/cnibench/lab/labtest"
)

// These run without root on nft output recorded from the real tool
// (testdata/, see TestRecordListings): the JSON parser, Verify's counts
// and checks, and the text Program sends nft at each sync.

const listCmd = "nft -j list table ip " + table

// recorded is a Datapath of layout lay (index in layouts) on knftables'
// fake whose "nft -j list table" answers the listing in testdata/file (none
// when "") and whose "nft -f -" succeeds.
func recorded(t *testing.T, lay int, file string) (*Datapath, *labtest.Tools) {
	t.Helper()
	tools := &labtest.Tools{Replies: map[string][]labtest.Reply{"nft -f -": {{}}}}
	if file != "" {
		tools.Replies[listCmd] = []labtest.Reply{{Out: labtest.ReadGolden(t, file)}}
	}
	opts := layouts[lay].opts
	opts.Timeout = time.Minute
	return &Datapath{run: tools, opts: opts, nft: knftables.NewFake(knftables.IPv4Family, table), prev: map[string]bool{}}, tools
}

func listingOf(t *testing.T, file string) *listing {
	t.Helper()
	l, err := parseListing(labtest.ReadGolden(t, file))
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return l
}

var (
	kubeProxyCounts = datapath.Counts{Services: 3, Endpoints: 6, Rules: 41, Chains: 25, Elements: 6}
	flatCounts      = datapath.Counts{Services: 3, Endpoints: 6, Rules: 27, Chains: 17, Elements: 18}
)

// Each recorded listing counts what GoldenSpec (3 Service ports × 2
// endpoints) put there, and holds each Service port's objects: its
// service-ips element, in kube-proxy's layout a service chain reaching
// its two endpoint chains in order (numgen indexes 0 and 1) and their
// DNATs, in the flat layout its endpoints-<proto> elements and hairpin
// pairs. The ruleset listing with another tool's tables (objects named
// like ours included) counts exactly as our table alone.
func TestParseRecordedListings(t *testing.T) {
	for _, c := range []struct {
		file string
		lay  int
		want datapath.Counts
	}{
		{"empty.json", 0, datapath.Counts{}},
		{"nftables.json", 0, kubeProxyCounts},
		{"foreign.json", 0, kubeProxyCounts},
		{"nftables-flat.json", 1, flatCounts},
	} {
		t.Run(c.file, func(t *testing.T) {
			l := listingOf(t, c.file)
			d, _ := recorded(t, c.lay, "")
			if got := d.count(l); got != c.want {
				t.Fatalf("counted %+v, want %+v", got, c.want)
			}
			if c.want.Services == 0 {
				return
			}
			if l.chains["input"] || len(l.elements[serviceIPsMap]) != 3 {
				t.Errorf("another table's objects were read: chains %v, service-ips %v", l.chains, l.elements[serviceIPsMap])
			}
			for _, s := range labtest.GoldenSpec().Services {
				if layouts[c.lay].opts.Flat {
					checkRecordedFlat(t, l, &s)
				} else {
					checkRecordedKubeProxy(t, l, &s)
				}
			}
		})
	}
}

func checkRecordedKubeProxy(t *testing.T, l *listing, s *datapath.Service) {
	t.Helper()
	sc := serviceChain(s)
	if v := l.elements[serviceIPsMap][svcKey(s)]; v != "goto "+sc {
		t.Errorf("service-ips %s: %q, want goto %s", svcKey(s), v, sc)
	}
	var targets []string
	for _, r := range l.rules[sc] {
		targets = append(targets, r.targets...)
	}
	want := []string{markMasqChain, endpointChain(s, s.Endpoints[0]), endpointChain(s, s.Endpoints[1])}
	if !slices.Equal(targets, want) {
		t.Errorf("%s reaches %q, want %q", sc, targets, want)
	}
	for _, ep := range s.Endpoints {
		var dnat []string
		for _, r := range l.rules[endpointChain(s, ep)] {
			dnat = append(dnat, r.dnat...)
		}
		if want := netip.AddrPortFrom(ep.IP, ep.Port).String(); len(dnat) != 1 || dnat[0] != want {
			t.Errorf("%s DNATs to %q, want %s", endpointChain(s, ep), dnat, want)
		}
	}
}

func checkRecordedFlat(t *testing.T, l *listing, s *datapath.Service) {
	t.Helper()
	if v := l.elements[serviceIPsMap][svcKey(s)]; v != "goto lb-2-endpoints" {
		t.Errorf("service-ips %s: %q, want goto lb-2-endpoints", svcKey(s), v)
	}
	for b, ep := range s.Endpoints {
		key := strings.Join([]string{s.VIP.String(), strconv.Itoa(int(s.Port)), strconv.Itoa(b)}, " . ")
		if v, want := l.elements[endpointsMap(proto(s))][key], ep.IP.String()+" . "+strconv.Itoa(int(ep.Port)); v != want {
			t.Errorf("%s %s: %q, want %q", endpointsMap(proto(s)), key, v, want)
		}
		if _, ok := l.elements[hairpinSet][ep.IP.String()+" . "+ep.IP.String()]; !ok {
			t.Errorf("no hairpin pair for %s", ep.IP)
		}
	}
}

// edited is the listing of testdata/file without the objects drop
// matches (kind and object) and with extra objects added, as nft would
// print it after a hand edit.
func edited(t *testing.T, file string, drop func(kind string, o map[string]any) bool, extra ...string) []byte {
	t.Helper()
	var doc struct {
		Nftables []map[string]map[string]any `json:"nftables"`
	}
	if err := json.Unmarshal(labtest.ReadGolden(t, file), &doc); err != nil {
		t.Fatal(err)
	}
	var out []map[string]map[string]any
	for _, obj := range doc.Nftables {
		keep := true
		for kind, o := range obj {
			keep = keep && (drop == nil || !drop(kind, o))
		}
		if keep {
			out = append(out, obj)
		}
	}
	for _, e := range extra {
		var obj map[string]map[string]any
		if err := json.Unmarshal([]byte(e), &obj); err != nil {
			t.Fatal(err)
		}
		out = append(out, obj)
	}
	b, err := json.Marshal(map[string]any{"nftables": out})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// dropElement drops the element whose key renders as key from the set or
// map name.
func dropElement(name, key string) func(string, map[string]any) bool {
	return func(kind string, o map[string]any) bool {
		if (kind == "map" || kind == "set") && o["name"] == name {
			els, _ := o["elem"].([]any)
			o["elem"] = slices.DeleteFunc(els, func(e any) bool {
				if kv, ok := e.([]any); ok && kind == "map" {
					e = kv[0]
				}
				return value(e) == key
			})
		}
		return false
	}
}

// Verify on the recorded listings: GoldenSpec holds in both layouts (and
// when nft lists the foreign tables too), and each hand edit is named by
// the error, which also makes the next sync a full one.
func TestVerifyOnRecordedListing(t *testing.T) {
	spec := labtest.GoldenSpec()
	api, dns := &spec.Services[1], &spec.Services[2]
	for _, c := range []struct {
		file string
		lay  int
		want datapath.Counts
	}{{"nftables.json", 0, kubeProxyCounts}, {"foreign.json", 0, kubeProxyCounts}, {"nftables-flat.json", 1, flatCounts}} {
		d, _ := recorded(t, c.lay, c.file)
		d.last = &spec
		if got, err := d.Verify(context.Background()); err != nil || got != c.want || got != d.Expected(spec) {
			t.Errorf("%s: %+v, %v; want %+v", c.file, got, err, c.want)
		}
	}
	apiEp := endpointChain(api, api.Endpoints[1])
	for _, c := range []struct {
		what string
		lay  int
		drop func(string, map[string]any) bool
		add  string
		want []string
	}{
		{what: "a service-ips element", drop: dropElement(serviceIPsMap, svcKey(api)),
			want: []string{"default/api", "no element " + svcKey(api) + " in map service-ips"}},
		{what: "a ClusterIP", drop: dropElement(clusterIPsSet, dns.VIP.String()),
			want: []string{"kube-system/dns:dns", "ClusterIP missing from set cluster-ips"}},
		{what: "an endpoint chain's DNAT", drop: func(kind string, o map[string]any) bool {
			b, _ := json.Marshal(o)
			return kind == "rule" && o["chain"] == apiEp && strings.Contains(string(b), `"dnat"`)
		}, want: []string{"default/api", "endpoint 198.19.1.11:8443: no DNAT rule in " + apiEp}},
		{what: "a base chain", drop: func(kind string, o map[string]any) bool { return kind == "chain" && o["name"] == natPreroutingChain },
			want: []string{"base chain nat-prerouting missing"}},
		{what: "nothing, one rule more", add: `{"rule": {"family": "ip", "table": "kube-proxy", "chain": "mark-for-masquerade", "expr": [{"return": null}]}}`,
			want: []string{"kernel holds 3 services, 6 endpoints, 42 rules, 25 chains, 6 elements, want 3 services, 6 endpoints, 41 rules"}},
		{what: "a flat endpoints element", lay: 1, drop: dropElement(endpointsMap("tcp"), "198.18.128.10 . 80 . 1"),
			want: []string{"default/web:http", `endpoint 198.19.1.10:8080: element 198.18.128.10 . 80 . 1 of map endpoints-tcp is "", want "198.19.1.10 . 8080"`}},
		{what: "a flat hairpin pair", lay: 1, drop: dropElement(hairpinSet, "198.19.0.12 . 198.19.0.12"),
			want: []string{"kube-system/dns:dns", "endpoint 198.19.0.12: no hairpin pair in set endpoint-hairpin"}},
	} {
		file := []string{"nftables.json", "nftables-flat.json"}[c.lay]
		var extra []string
		if c.add != "" {
			extra = append(extra, c.add)
		}
		d, tools := recorded(t, c.lay, "")
		tools.Replies[listCmd] = []labtest.Reply{{Out: edited(t, file, c.drop, extra...)}}
		d.last = &spec
		_, err := d.Verify(context.Background())
		for _, w := range c.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v, want an error with %q", c.what, err, w)
			}
		}
		if !d.drift {
			t.Errorf("%s: the next sync would not be a full one", c.what)
		}
	}
}

// Before any Program, an absent table is an empty datapath (nft's own
// error, recorded); after one it is an error. Memory reads it as 0 bytes.
func TestRecordedAbsentTable(t *testing.T) {
	absent := errors.New(string(labtest.ReadGolden(t, "absent.err")))
	d, tools := recorded(t, 0, "")
	tools.Replies[listCmd] = []labtest.Reply{{Err: absent}}
	tools.Replies["nft list table ip "+table] = []labtest.Reply{{Err: absent}}
	if got, err := d.Verify(context.Background()); err != nil || got != (datapath.Counts{}) {
		t.Errorf("nothing programmed, no table: %+v, %v", got, err)
	}
	if m, err := d.Memory(context.Background()); err != nil || m.RulesetBytes != 0 {
		t.Errorf("memory without the table: %+v, %v", m, err)
	}
	spec := labtest.GoldenSpec()
	d.last = &spec
	if _, err := d.Verify(context.Background()); err == nil || !strings.Contains(err.Error(), "nftables: list table ip kube-proxy: nft: exit status 1: Error: No such file or directory") {
		t.Errorf("table gone after a Program: %v", err)
	}
}

// A listing the parser cannot read fails with one line saying what, and
// Verify passes it on instead of counting.
func TestParseListingMalformed(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"nftables": [`, "parse nft JSON: unexpected end of JSON input"},
		{`{"rules": []}`, `parse nft JSON: no "nftables" array`},
		{`{"nftables": [{"rule": {"family": "ip", "table": "kube-proxy", "chain": "services", "expr": 7}}]}`,
			"parse nft JSON: object 0 (rule): json: cannot unmarshal number into Go struct field .Expr of type []interface {}"},
		{`{"nftables": [{"metainfo": {}}, {"map": {"family": "ip", "table": "kube-proxy", "name": "service-ips", "elem": ["198.18.128.1"]}}]}`,
			"parse nft JSON: object 1 (map): map service-ips: element 198.18.128.1"},
	} {
		_, err := parseListing([]byte(c.in))
		if err == nil || err.Error() != c.want {
			t.Errorf("%s: %v, want %q", c.in, err, c.want)
		}
	}
	d, tools := recorded(t, 0, "")
	tools.Replies[listCmd] = []labtest.Reply{{Out: []byte("Error: not JSON")}}
	_, err := d.Verify(context.Background())
	if want := "nftables: parse nft JSON: invalid character 'E' looking for beginning of value"; err == nil || err.Error() != want {
		t.Errorf("Verify on a malformed listing: %v, want %q", err, want)
	}
}

// What Program sends nft at a sweep step: the first sync writes every
// Service's chains; the next (one Service's endpoint changed, one dropped,
// one added) rewrites the changed and new Services' chains only, and
// flushes then deletes the dropped one's; after nft fails, the next sync
// rewrites every chain again.
func TestProgramSweepStepOnRecordedTools(t *testing.T) {
	d, tools := recorded(t, 0, "")
	ctx := context.Background()
	spec := labtest.GoldenSpec()
	st, err := d.Program(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	first := tools.Calls[0]
	if first.Line != "nft -f -" || len(first.Stdin) != st.Bytes {
		t.Fatalf("ran %q with %d bytes (stats %d)", first.Line, len(first.Stdin), st.Bytes)
	}
	for _, s := range spec.Services {
		if !strings.Contains(string(first.Stdin), "add rule ip kube-proxy "+serviceChain(&s)+" ") {
			t.Errorf("first sync does not write %s", serviceChain(&s))
		}
	}
	step := labtest.GoldenSpec()
	web, api, dns := step.Services[0], step.Services[1], step.Services[2]
	api.Endpoints = slices.Clone(api.Endpoints)
	api.Endpoints[1].Port = 9443
	added := datapath.DummyServices(1, 3)[0]
	step.Services = []datapath.Service{web, api, added} // dns dropped
	if _, err := d.Program(ctx, step); err != nil {
		t.Fatal(err)
	}
	text := string(tools.Calls[1].Stdin)
	for _, c := range []struct {
		line string
		want bool
	}{
		{"add rule ip kube-proxy " + serviceChain(&web) + " ", false},
		{"flush chain ip kube-proxy " + serviceChain(&web) + "\n", false},
		{"add rule ip kube-proxy " + serviceChain(&api) + " ", true},
		{"add rule ip kube-proxy " + endpointChain(&api, api.Endpoints[1]) + " meta l4proto tcp dnat to 198.19.1.11:9443", true},
		{"add rule ip kube-proxy " + serviceChain(&added) + " ", true},
		{"flush chain ip kube-proxy " + serviceChain(&dns) + "\n", true},
		{"delete chain ip kube-proxy " + serviceChain(&dns) + "\n", true},
		{"delete chain ip kube-proxy " + endpointChain(&dns, dns.Endpoints[1]) + "\n", true},
		{"delete chain ip kube-proxy " + endpointChain(&api, spec.Services[1].Endpoints[1]) + "\n", true},
	} {
		if strings.Contains(text, c.line) != c.want {
			t.Errorf("sweep step has %q: %v, want %v", c.line, !c.want, c.want)
		}
	}
	if strings.Index(text, "delete chain ip kube-proxy "+serviceChain(&dns)) < strings.Index(text, "flush chain ip kube-proxy "+endpointChain(&dns, dns.Endpoints[0])) {
		t.Error("a stale chain is deleted before every stale chain is flushed")
	}
	tools.Replies["nft -f -"] = []labtest.Reply{{Err: errors.New("nft: exit status 1: Error: Could not process rule")}, {}}
	if _, err := d.Program(ctx, step); err == nil || !strings.Contains(err.Error(), "transaction of 3 Services") {
		t.Fatalf("failed nft: %v", err)
	}
	if _, err := d.Program(ctx, step); err != nil {
		t.Fatal(err)
	}
	if text := string(tools.Calls[3].Stdin); !strings.Contains(text, "add rule ip kube-proxy "+serviceChain(&web)+" ") {
		t.Error("the sync after a failed one does not rewrite an unchanged Service's chain")
	}
}
