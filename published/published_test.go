package published

import (
	"strings"
	"testing"
)

func TestEmbeddedReportsParse(t *testing.T) {
	all, err := All()
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"connectivity-perf", "cilium-2021", "tke", "eks"} {
		r, err := Lookup(id)
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Cells) == 0 {
			t.Errorf("%s: no published figure", id)
		}
	}
	if len(all) < 3 {
		t.Errorf("%d reports, want at least 3", len(all))
	}
	c, ok := mustLookup(t, "tke").Cell("HTTP RPS short connection, c64", "Cilium native")
	if !ok || c.Value != 13826 || c.Unit != "req/s" {
		t.Errorf("TKE short-connection RPS, Cilium native = %+v, %v; want 13826 req/s as published", c, ok)
	}
}

func mustLookup(t *testing.T, id string) Report {
	t.Helper()
	r, err := Lookup(id)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestLookupUnknown(t *testing.T) {
	_, err := Lookup("nope")
	if err == nil || !strings.Contains(err.Error(), `no published report "nope" (known: `) {
		t.Fatalf("err = %v", err)
	}
}

// Bad files fail with a one-line error naming the fault.
func TestParseRejectsBadFiles(t *testing.T) {
	const head = `{"reports":[{"id":"x","title":"T","source":"S","date":"2026","hardware":"H","columns":["a"],"rows":["r"],"cells":[`
	for _, tc := range []struct{ name, data, want string }{
		{"not json", `{`, "published reports: unexpected EOF"},
		{"unknown field", `{"reports":[],"extra":1}`, `unknown field "extra"`},
		{"empty", `{"reports":[]}`, "no report"},
		{"no source", `{"reports":[{"id":"x","title":"T","date":"2026","hardware":"H","columns":["a"],"rows":["r"]}]}`, `published report "x": no source`},
		{"no rows", `{"reports":[{"id":"x","title":"T","source":"S","date":"2026","hardware":"H","columns":["a"]}]}`, "no rows"},
		{"row twice", `{"reports":[{"id":"x","title":"T","source":"S","date":"2026","hardware":"H","columns":["a"],"rows":["r","r"]}]}`, `row "r" listed twice`},
		{"unknown row", head + `{"row":"q","column":"a","value":1,"unit":"µs"}]}]}`, `cell on unknown row "q"`},
		{"unknown column", head + `{"row":"r","column":"b","value":1,"unit":"µs"}]}]}`, `unknown column "b"`},
		{"cell twice", head + `{"row":"r","column":"a","value":1,"unit":"µs"},{"row":"r","column":"a","value":2,"unit":"µs"}]}]}`, "given twice"},
		{"range without its value", head + `{"row":"r","column":"a","value":1,"unit":"µs","low":2,"high":3}]}]}`, "range 2–3 does not hold its value 1"},
		{"unknown unit", head + `{"row":"r","column":"a","value":1,"unit":"furlongs"}]}]}`, `unknown unit "furlongs"`},
		{"report twice", `{"reports":[{"id":"x","title":"T","source":"S","date":"2026","hardware":"H","columns":["a"],"rows":["r"]},{"id":"x","title":"T","source":"S","date":"2026","hardware":"H","columns":["a"],"rows":["r"]}]}`, `published report "x": listed twice`},
	} {
		_, err := Parse([]byte(tc.data))
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: err = %v, want one line with %q", tc.name, err, tc.want)
		}
	}
}

func TestConvert(t *testing.T) {
	for _, tc := range []struct {
		v        float64
		from, to string
		want     float64
		ok       bool
	}{
		{0.99, "ms", "µs", 990, true},
		{10.43, "Gbit/s", "Mbit/s", 10430, true},
		{20000, "trans/s", "conn/s", 20000, true},
		{1, "Gbit/s", "µs", 0, false},
		{1, "furlongs", "µs", 0, false},
	} {
		got, ok := Convert(tc.v, tc.from, tc.to)
		if ok != tc.ok || (ok && (got < tc.want*0.999999 || got > tc.want*1.000001)) {
			t.Errorf("Convert(%g, %s, %s) = %g, %v; want %g, %v", tc.v, tc.from, tc.to, got, ok, tc.want, tc.ok)
		}
	}
}

// Every figure carries its source, date and hardware: its own where the
// file gives them, else its report's.
func TestEveryCellCarriesItsProvenance(t *testing.T) {
	const data = `{"reports":[{"id":"x","title":"T","source":"S","date":"2026","hardware":"H","columns":["a","b"],"rows":["r"],"cells":[` +
		`{"row":"r","column":"a","value":1,"unit":"µs"},{"row":"r","column":"b","value":2,"unit":"µs","source":"a follow-up post","date":"2027"}]}]}`
	rs, err := Parse([]byte(data))
	if err != nil {
		t.Fatal(err)
	}
	a, _ := rs[0].Cell("r", "a")
	b, _ := rs[0].Cell("r", "b")
	if a.Source != "S" || a.Date != "2026" || a.Hardware != "H" || a.OwnProvenance(rs[0]) {
		t.Errorf("a: %+v, want the report's provenance", a)
	}
	if b.Source != "a follow-up post" || b.Date != "2027" || b.Hardware != "H" || !b.OwnProvenance(rs[0]) {
		t.Errorf("b: %+v, want its own source and date, the report's hardware", b)
	}
	all, _ := All()
	for _, r := range all {
		for _, c := range r.Cells {
			if c.Source == "" || c.Date == "" || c.Hardware == "" {
				t.Errorf("%s %s / %s: no provenance", r.ID, c.Row, c.Column)
			}
		}
	}
}
