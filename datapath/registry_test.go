package datapath

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

func open(Site) (Datapath, error) { return nil, fmt.Errorf("not opened in tests") }

// A registry keeps registration order and finds variants by name only.
func TestRegistryOrder(t *testing.T) {
	var r registry
	r.add(Variant{Name: "b-two", Short: "b2", Netfilter: true, Open: open},
		Variant{Name: "a", Short: "a", Scope: PerLab, Open: open})
	r.add(Variant{Name: "c", Short: "c", Open: open})
	if got := r.names(); !slices.Equal(got, []string{"b-two", "a", "c"}) {
		t.Errorf("names %v, want registration order b-two a c", got)
	}
	if v, ok := r.lookup("a"); !ok || v.Scope != PerLab || v.Short != "a" {
		t.Errorf("lookup a: %+v %v", v, ok)
	}
	for _, n := range []string{"", "b2", "B-TWO", "b"} {
		if _, ok := r.lookup(n); ok {
			t.Errorf("lookup %q found a variant", n)
		}
	}
}

// Register refuses, at start, what would break a call site: a name that
// cannot be a scenario part, a token that cannot be in a lab name, two
// variants that would share a name or a lab.
func TestRegistryRefuses(t *testing.T) {
	for _, c := range []struct {
		v    Variant
		want string
	}{
		{Variant{Name: "x+y", Short: "xy", Open: open}, `name "x+y" is not`},
		{Variant{Name: "", Short: "e", Open: open}, `name "" is not`},
		{Variant{Name: "x-", Short: "x", Open: open}, `name "x-" is not`},
		{Variant{Name: "x", Short: "x-1", Open: open}, `x: lab-name token "x-1" is not`},
		{Variant{Name: "x", Short: "", Open: open}, `x: lab-name token "" is not`},
		{Variant{Name: "x", Short: "x"}, "x: no constructor"},
		{Variant{Name: "x", Short: "x", Scope: 7, Open: open}, "x: unknown scope 7"},
		{Variant{Name: "taken", Short: "new", Open: open}, "taken (token new) registered twice (as taken, token tk)"},
		{Variant{Name: "new", Short: "tk", Open: open}, "new (token tk) registered twice (as taken, token tk)"},
	} {
		r := registry{variants: []Variant{{Name: "taken", Short: "tk", Open: open}}}
		got := func() (msg string) {
			defer func() { msg = fmt.Sprint(recover()) }()
			r.add(c.v)
			return ""
		}()
		if !strings.HasPrefix(got, "datapath: Register: ") || !strings.Contains(got, c.want) {
			t.Errorf("%+v: panic %q, want %q", c.v, got, c.want)
		}
		if len(r.variants) != 1 {
			t.Errorf("%+v: registered anyway", c.v)
		}
	}
}

func TestProse(t *testing.T) {
	for in, want := range map[string]string{"": "", "a": "a", "a b": "a or b", "a b c": "a, b or c"} {
		if got := prose(strings.Fields(in)); got != want {
			t.Errorf("prose(%q) = %q, want %q", in, got, want)
		}
	}
}
