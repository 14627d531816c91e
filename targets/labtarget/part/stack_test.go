package part

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/lab"
	"github.com/cnibench/cnibench/results"
)

// fake is a part that logs its opening and closing, with no lab: it fails
// to open when fail is set, having opened half of itself (what a real
// part does when its second node fails).
type fake struct {
	name  string
	phase Phase
	fail  bool
	log   *[]string
}

func (f fake) Name() string               { return f.name }
func (f fake) Token() string              { return f.name[:1] }
func (f fake) Phase() Phase               { return f.phase }
func (f fake) Configure(c *lab.Config)    {}
func (f fake) Conflicts(s Scenario) error { return nil }
func (f fake) Checks() []results.Check {
	return []results.Check{{Part: f.name, Label: "fake", Text: f.name + " on"}}
}
func (f fake) Close() error { *f.log = append(*f.log, "close "+f.name); return nil }
func (f fake) Sweep(context.Context, Env) error {
	*f.log = append(*f.log, "sweep "+f.name)
	return nil
}
func (f fake) Open(ctx context.Context, env Env) (Opened, error) {
	*f.log = append(*f.log, "open "+f.name)
	if f.fail {
		return f, errors.New("second node failed")
	}
	return f, nil
}

// Parts open in phase order (then as named), each swept first; the
// checks come in that order; Close closes them in reverse.
func TestStackOrder(t *testing.T) {
	var log []string
	parts := []Part{fake{"flows", Flows, false, &log}, fake{"tune", Tuning, false, &log}, fake{"pol", Policy, false, &log}, fake{"cc", Tuning, false, &log}}
	early, late := Until(Ordered(parts), Tuning)
	if names(early) != "tune,cc" || names(late) != "pol,flows" {
		t.Fatalf("ordered: %s | %s", names(early), names(late))
	}
	var s Stack
	if err := s.Open(context.Background(), nil, early); err != nil {
		t.Fatal(err)
	}
	if err := s.Open(context.Background(), nil, late); err != nil {
		t.Fatal(err)
	}
	var checks []string
	for _, c := range s.Checks() {
		checks = append(checks, c.Text)
	}
	if strings.Join(checks, ",") != "tune on,cc on,pol on,flows on" {
		t.Errorf("checks %v", checks)
	}
	if err := s.Close(); err != nil || s.Close() != nil {
		t.Fatal(err)
	}
	want := "sweep tune,open tune,sweep cc,open cc,sweep pol,open pol,sweep flows,open flows,close flows,close pol,close cc,close tune"
	if got := strings.Join(log, ","); got != want {
		t.Errorf("log\n%s\nwant\n%s", got, want)
	}
}

// A part that fails to open closes what it opened and every part opened
// before it (k, k-1 … 1), also those of an earlier Open; later parts
// never open; the error names the part.
func TestStackRollback(t *testing.T) {
	var log []string
	var s Stack
	if err := s.Open(context.Background(), nil, []Part{fake{"a", Tuning, false, &log}}); err != nil {
		t.Fatal(err)
	}
	err := s.Open(context.Background(), nil, []Part{fake{"b", Policy, false, &log}, fake{"c", L7, true, &log}, fake{"d", Flows, false, &log}})
	if err == nil || !strings.HasPrefix(err.Error(), "c: second node failed") {
		t.Fatalf("error %v", err)
	}
	want := "sweep a,open a,sweep b,open b,sweep c,open c,close c,close b,close a"
	if got := strings.Join(log, ","); got != want {
		t.Errorf("log\n%s\nwant\n%s", got, want)
	}
	if s.Close() != nil || len(log) != 9 {
		t.Errorf("closed twice: %v", log)
	}
}

// A cancelled run opens nothing more and rolls back.
func TestStackCancelled(t *testing.T) {
	var log []string
	var s Stack
	ctx, cancel := context.WithCancel(context.Background())
	if err := s.Open(ctx, nil, []Part{fake{"a", Tuning, false, &log}}); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := s.Open(ctx, nil, []Part{fake{"b", Policy, false, &log}}); !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v", err)
	}
	if got := strings.Join(log, ","); got != "sweep a,open a,close a" {
		t.Errorf("log %s", got)
	}
}

// Configure looks each name up in the registry, configures in phase
// order, checks conflicts on the finished scenario and names the lab
// after the tokens; an unknown part is a one-line error naming it.
func TestConfigure(t *testing.T) {
	var log []string
	Register(Def{Help: []string{"zz-fake"}, Parse: func(n string) (Part, bool, error) {
		if n == "zz-bad" {
			return nil, true, fmt.Errorf("%q: a bad fake", n)
		}
		return fake{n, Policy, false, &log}, strings.HasPrefix(n, "zz-"), nil
	}})
	t.Cleanup(func() { defs = defs[:len(defs)-1] })
	s, err := Configure(results.ScenarioName{"zz-a", "zz-b"}, lab.Config{Nodes: 1})
	if err != nil || s.Lab.Name != "zz" || !s.Has("zz-b") || s.Has("zz-c") || len(s.Others(s.Parts[0], func(Part) bool { return true })) != 1 {
		t.Fatalf("%+v %v", s, err)
	}
	for bad, want := range map[string]string{"zz-bad": `"zz-bad": a bad fake`, "nope": `unknown scenario "nope"`} {
		if _, err := Configure(results.ScenarioName{bad}, lab.Config{}); err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v", bad, err)
		}
	}
	if !slices.Contains(Names(), "zz-fake") {
		t.Error("Names lacks the registered part")
	}
}

func names(parts []Part) string {
	var n []string
	for _, p := range parts {
		n = append(n, p.Name())
	}
	return strings.Join(n, ",")
}
