package kinds_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/cnibench/cnibench/engine" // registers stream and rr, as cmd/cnibench links it
	"github.com/cnibench/cnibench/engine/dnsload"
	"github.com/cnibench/cnibench/engine/httpload"
	"github.com/cnibench/cnibench/engine/kinds"
	"github.com/cnibench/cnibench/report"
	"github.com/cnibench/cnibench/results"
)

// The built-in kinds (registered by the engine packages this test links)
// keep the catalogue and the ports they had before the registry.
func TestBuiltinKinds(t *testing.T) {
	var names, ports []string
	for _, k := range kinds.All() {
		if k.Name == "toy" { // registered by TestToyKind, when run before
			continue
		}
		for _, tst := range k.Tests {
			names = append(names, tst.Name+":"+tst.Kind)
		}
		for _, p := range k.Ports {
			ports = append(ports, p.Name+"="+p.String())
		}
	}
	want := "TCP_STREAM:stream TCP_STREAM_MULTI:stream UDP_STREAM:stream UDP_STREAM_MULTI:stream TCP_RR:rr UDP_RR:rr TCP_CRR:rr " +
		"HTTP_RPS_C64:http HTTP_RPS_C256:http HTTP_RPS_SHORT_C64:http HTTP_QPS_1000:http HTTP_QPS_5000:http DNS_QPS_MAX:dns DNS_QPS_1000:dns"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("catalogue:\n got %s\nwant %s", got, want)
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
	type bare struct{ Host string }
	mustPanic("options without the base", kinds.Kind{Name: "bare", Owns: ok, Read: read, Line: line,
		OptionsKey: "bare_options", NewOptions: func() any { return new(bare) }})
	mustPanic("results without the base", kinds.Kind{Name: "bare", Owns: ok, Read: read, Line: line,
		Key: "bare", NewResult: func() any { return new(bare) }})
	registerToy()
	type other struct{ kinds.RunnerResults }
	mustPanic("another kind's key for another type", kinds.Kind{Name: "thief", Owns: ok, Read: read, Line: line,
		Key: "toy", NewResult: func() any { return new(other) }})
}

// toyResult is the result of a toy engine kind: the demonstration that a
// kind registered in one place is known to the catalogue, the ports,
// results (stored, loaded, turned into metrics) and the report without an
// edit there.
type toyResult struct {
	Pings float64 `json:"pings_per_sec"`
	kinds.RunnerResults
}

type toyOptions struct {
	Host string `json:"host"`
	kinds.RunnerOptions
}

var registerToyOnce sync.Once

func registerToy() { registerToyOnce.Do(func() { kinds.Register(toyKind()) }) }

func toyKind() kinds.Kind {
	return (kinds.Kind{
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
		PerWork: kinds.PerWork{Client: "client CPU per ping", Server: "server CPU per ping", Unit: "µs"},
		Line:    func(r any) string { return "pings" },
		Table: kinds.Table{Order: 50, Columns: []kinds.Column{{Head: "Pings/s", Metric: "ping rate", Format: "%.0f"},
			{Head: "CPU µs/ping (cli+srv)", Metric: "client CPU per ping", Plus: "server CPU per ping", Format: "%.1f"}}},
		Key: "toy", OptionsKey: "toy_options",
		NewResult:  func() any { return new(toyResult) },
		NewOptions: func() any { return new(toyOptions) },
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
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	smp := func(round int, pings float64) results.Sample {
		return results.Sample{Round: round, Start: start, End: start.Add(2 * time.Second), ClientCPUSec: 0.5, ServerCPUSec: 0.25,
			Result: &toyResult{Pings: pings, RunnerResults: kinds.RunnerResults{Seconds: 2}}}
	}
	res := results.Result{Scenario: "default", Test: "TOY_PING", Placement: results.Placement{Path: "pod-to-pod", Node: "same-node"},
		Options: &toyOptions{Host: "198.19.1.10"},
		Samples: []results.Sample{smp(1, 1000), smp(2, 3000), {Round: 3, Error: "toy server down"}}}
	run := &results.Run{SchemaVersion: results.SchemaVersion, RunID: "toy", Status: results.StatusComplete,
		Scenarios: []results.Scenario{{Name: "default"}}, Plan: results.Plan{Rounds: 3}, Results: []results.Result{res}}

	dir := t.TempDir()
	if err := results.Save(dir, run); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, results.FileName))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"toy_options": {`, `"toy": {`, `"pings_per_sec": 3000`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("results.json has no %s:\n%s", want, b)
		}
	}
	back, err := results.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	got := back.Results[0]
	if o, ok := got.Options.(*toyOptions); !ok || o.Host != "198.19.1.10" || got.Kind() != "toy" {
		t.Fatalf("loaded options %#v, kind %q", got.Options, got.Kind())
	}
	if r, ok := got.Samples[1].Result.(*toyResult); !ok || r.Pings != 3000 {
		t.Fatalf("loaded sample %#v", got.Samples[1].Result)
	}

	s, err := results.Metrics(got)
	if err != nil {
		t.Fatal(err)
	}
	rate, cpu := s.Metric("ping rate"), s.Metric("client CPU per ping")
	if s.Kind != "toy" || s.Failed != 1 || rate == nil || rate.Display != 2000 || cpu == nil || len(cpu.Values) != 2 {
		t.Fatalf("metrics: %+v", s)
	}
	// 0.5 s of client CPU over 2,000 pings (first sample): 250 µs each.
	if cpu.Values[0] != 250 {
		t.Errorf("client CPU per ping %v, want 250 µs", cpu.Values[0])
	}

	var out bytes.Buffer
	if err := report.Table(&out, back); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Pings/s", "TOY_PING", "2000", "166.7+83.3"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table has no %q:\n%s", want, out.String())
		}
	}
	rep, err := report.Build([]report.Input{{Run: back}}, report.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if sec := rep.Sections[0]; sec.About != "pings per second" || sec.TableKind() != "toy" {
		t.Errorf("section %+v", sec)
	}
}

// A load sample without a single answer fails, saying why, instead of
// reading as a rate of 0.
func TestBuiltinChecks(t *testing.T) {
	check := func(r any) string {
		k, ok := kinds.Of(r)
		if !ok || k.Check == nil {
			t.Fatalf("%T: no kind with a Check", r)
		}
		if err := k.Check(r); err != nil {
			return err.Error()
		}
		return ""
	}
	h := &httpload.Result{RunnerResults: kinds.RunnerResults{Seconds: 1}, Errors: httpload.Errors{Total: 3, First: "connection refused"}}
	if got, want := check(h), "no HTTP response in the 1.00s measured interval (3 errors, first: connection refused)"; got != want {
		t.Errorf("HTTP: %q, want %q", got, want)
	}
	h.Requests = 1
	if got := check(h); got != "" {
		t.Errorf("HTTP with a response: %q", got)
	}
	d := &dnsload.Result{Sent: 5, Errors: dnsload.Errors{First: "timeout"}}
	if got := check(d); !strings.HasPrefix(got, "no DNS answer to 5 queries: timeout") {
		t.Errorf("DNS: %q", got)
	}
	d.Responses = 5
	if got := check(d); got != "" {
		t.Errorf("DNS with answers: %q", got)
	}
}

// A kind that Dials another's server takes that server's ports; a kind
// with a server of its own keeps its own.
func TestServerPorts(t *testing.T) {
	own := []kinds.Port{{Name: "toy", Number: 9, Proto: "udp"}}
	if got := (kinds.Kind{Ports: own}).ServerPorts(); len(got) != 1 || got[0] != own[0] {
		t.Errorf("own server: %v", got)
	}
	if got := (kinds.Kind{Dials: "http"}).ServerPorts(); len(got) != 1 || got[0].String() != "8080/tcp" || got[0].Name != "http" {
		t.Errorf("dialing http: %v", got)
	}
	if got := (kinds.Kind{Dials: "no-such-kind"}).ServerPorts(); got != nil {
		t.Errorf("dialing an unregistered kind: %v", got)
	}
}
