package part

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/results"
)

// metered is an opened fake with every optional face: a detail, a
// placement it cannot serve, and CPU counted per sample.
type metered struct {
	fake
	cpu *float64
}

func (m metered) AddDetails(d map[string]any) { d[m.name] = "on" }
func (m metered) Unsupported(pl string) error {
	if pl == "no-"+m.name {
		return errors.New(m.name + " cannot serve " + pl)
	}
	return nil
}
func (m metered) StartUsage(context.Context) (any, error) { return *m.cpu, nil }
func (m metered) EndUsage(_ context.Context, mark any, u *results.DatapathUsage) error {
	u.Components = append(u.Components, results.ComponentUsage{Plugin: m.name, CPUSec: *m.cpu - mark.(float64)})
	return nil
}

type meteredPart struct{ metered }

func (p meteredPart) Open(context.Context, Env) (Opened, error) { return p.metered, nil }

// Details, placements and usage are loops over the open parts: each
// part's record, the first reason a placement cannot be served, and each
// meter's CPU since the sample's start, totalled; no meter, no usage.
func TestStackLoops(t *testing.T) {
	var log []string
	var s Stack
	if m, err := s.StartUsage(context.Background()); m != nil || err != nil {
		t.Fatalf("usage without parts: %v %v", m, err)
	}
	a, b := 1.0, 10.0
	parts := []Part{meteredPart{metered{fake{"a", Policy, false, &log}, &a}}, fake{"plain", Build, false, &log}, meteredPart{metered{fake{"b", Flows, false, &log}, &b}}}
	if err := s.Open(context.Background(), nil, Ordered(parts)); err != nil {
		t.Fatal(err)
	}
	d := map[string]any{}
	s.AddDetails(d)
	if d["a"] != "on" || d["b"] != "on" || len(d) != 2 {
		t.Errorf("details %v", d)
	}
	if err := s.Unsupported("no-b"); err == nil || !strings.Contains(err.Error(), "b cannot serve no-b") || s.Unsupported("any") != nil {
		t.Errorf("unsupported: %v", err)
	}
	mark, err := s.StartUsage(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	a, b = 1.5, 12
	u, err := s.EndUsage(context.Background(), mark, "lab")
	if err != nil || len(u.Components) != 2 || u.CPUSec != 2.5 || u.Source != "lab" || u.Seconds <= 0 {
		t.Fatalf("usage %+v %v", u, err)
	}
}
