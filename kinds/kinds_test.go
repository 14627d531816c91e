package kinds_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/kinds"
	"github.com/cnibench/cnibench/report"
	"github.com/cnibench/cnibench/results"
)

// The built-in kinds (registered by the engine packages results imports)
// keep the catalogue and the ports they had before the registry.
func TestBuiltinKinds(t *testing.T) {
	var names []string
	for _, tst := range kinds.Tests() {
		names = append(names, tst.Name+":"+tst.Kind)
	}
	want := "TCP_STREAM:stream TCP_STREAM_MULTI:stream UDP_STREAM:stream UDP_STREAM_MULTI:stream TCP_RR:rr UDP_RR:rr TCP_CRR:rr " +
		"HTTP_RPS_C64:http HTTP_RPS_C256:http HTTP_RPS_SHORT_C64:http HTTP_QPS_1000:http HTTP_QPS_5000:http DNS_QPS_MAX:dns DNS_QPS_1000:dns"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("catalogue:\n got %s\nwant %s", got, want)
	}
	var ports []string
	for _, p := range kinds.Ports() {
		ports = append(ports, p.Name+"="+p.String())
	}
	wantPorts := "tcp-stream=5201/tcp udp-stream=5202/udp tcp-rr=5203/tcp udp-rr=5204/udp tcp-crr=5205/tcp http=8080/tcp dns=53/udp"
	if got := strings.Join(ports, " "); got != wantPorts {
		t.Errorf("ports:\n got %s\nwant %s", got, wantPorts)
	}
	if n := len(kinds.ExposedPorts()); n != 6 {
		t.Errorf("%d exposed ports, want 6 (all but dnsmasq's)", n)
	}
}

// Register refuses a kind that would make the registry ambiguous.
func TestRegisterRefusesDuplicates(t *testing.T) {
	mustPanic := func(name string, k kinds.Kind) {
		t.Helper()
		defer func() {
			if recover() == nil {
				t.Errorf("%s: Register did not panic", name)
			}
		}()
		kinds.Register(k)
	}
	ok := func(any) bool { return false }
	read := func(string, any) kinds.Reading { return kinds.Reading{} }
	line := func(any) string { return "" }
	mustPanic("kind twice", kinds.Kind{Name: "rr", Owns: ok, Read: read, Line: line})
	mustPanic("test of another kind", kinds.Kind{Name: "dup-test", Owns: ok, Read: read, Line: line, Tests: []kinds.Test{{Name: "tcp_rr"}}})
	mustPanic("incomplete", kinds.Kind{Name: "incomplete"})
}

// toyResult is the result of a toy engine kind: the demonstration that a
// kind registered in one place is known to the catalogue, the ports,
// results and the report without an edit there.
type toyResult struct{ Pings, Seconds float64 }

func registerToy() {
	kinds.Register(kinds.Kind{
		Name:  "toy",
		Order: 90,
		Tests: []kinds.Test{{Name: "TOY_PING", About: "pings per second"}},
		Ports: []kinds.Port{{Name: "toy", Number: 5299, Proto: "udp"}},
		Owns:  func(r any) bool { _, ok := r.(*toyResult); return ok },
		Read: func(_ string, r any) kinds.Reading {
			x := r.(*toyResult)
			return kinds.Reading{Seconds: x.Seconds, Work: x.Pings * x.Seconds, Scale: 1e6,
				Values: []kinds.Value{{Name: "ping rate", Unit: "pings/s", Better: kinds.HigherIsBetter, Headline: true, V: x.Pings}}}
		},
		Line:  func(r any) string { return "pings" },
		Table: kinds.Table{Order: 50, Columns: []kinds.Column{{Head: "Pings/s", Metric: "ping rate", Format: "%.0f"}}},
	})
}

func TestToyKind(t *testing.T) {
	registerToy()
	tst, ok := kinds.LookupTest("toy_ping")
	if !ok || tst.Kind != "toy" {
		t.Fatalf("catalogue: %+v %v", tst, ok)
	}
	if k, ok := kinds.Of(&toyResult{Pings: 3}); !ok || k.Name != "toy" || k.Line(&toyResult{}) != "pings" {
		t.Fatalf("Of: %+v %v", k, ok)
	}
	if ps := kinds.Ports(); ps[len(ps)-1].Number != 5299 {
		t.Errorf("ports: %v", ps)
	}
	res := results.Result{Scenario: "default", Test: "TOY_PING", Placement: results.Placement{Path: "pod-to-pod", Node: "same-node"},
		Samples: []results.Sample{{Round: 1, Error: "toy server down"}}}
	if res.Kind() != "toy" {
		t.Errorf("Result.Kind = %q", res.Kind())
	}
	run := &results.Run{SchemaVersion: results.SchemaVersion, Status: results.StatusComplete,
		Scenarios: []results.Scenario{{Name: "default"}}, Plan: results.Plan{Rounds: 1}, Results: []results.Result{res}}
	var out bytes.Buffer
	if err := report.Table(&out, run); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "Pings/s") || !strings.Contains(out.String(), "TOY_PING") {
		t.Errorf("the toy's section is not in its own table:\n%s", out.String())
	}
	rep, err := report.Build([]report.Input{{Run: run}}, report.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if s := rep.Sections[0]; s.About != "pings per second" || s.TableKind() != "toy" {
		t.Errorf("section %+v", s)
	}
}
