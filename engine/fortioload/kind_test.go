package fortioload

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/engine/kinds"
	"github.com/cnibench/cnibench/report"
	"github.com/cnibench/cnibench/results"
)

func TestCatalogueAndOptions(t *testing.T) {
	want := map[string]Options{
		"FORTIO_RPS_C64":       {Connections: 64, KeepAlive: true},
		"FORTIO_RPS_SHORT_C64": {Connections: 64},
		"FORTIO_QPS_1000":      {Connections: 64, KeepAlive: true, QPS: 1000},
		"FORTIO_QPS_5000":      {Connections: 64, KeepAlive: true, QPS: 5000},
	}
	k, ok := kinds.Lookup("fortio")
	if !ok {
		t.Fatal("fortio kind not registered")
	}
	share := &kinds.PortShare{Index: 1, Count: 2}
	plan := kinds.Plan{Duration: 3 * time.Second, Warmup: time.Second, PortShare: share, Ports: map[string]int{"http": 9000}}
	for name, w := range want {
		test, ok := kinds.LookupTest(strings.ToLower(name))
		if !ok || test.Kind != "fortio" || test.About == "" {
			t.Fatalf("%s: not in the catalogue as a fortio test: %+v", name, test)
		}
		o := k.Options(test, "198.19.1.10", plan).(*Options)
		if o.Host != "198.19.1.10" || o.Port != 9000 || o.Connections != w.Connections || o.KeepAlive != w.KeepAlive || o.QPS != w.QPS ||
			o.Duration != kinds.Duration(3*time.Second) || o.Warmup != kinds.Duration(time.Second) || o.PortShare != share {
			t.Errorf("%s: options %+v", name, o)
		}
		if err := o.Validate(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if got := k.Tests; len(got) != len(want) {
		t.Errorf("fortio registers %d tests, want %d", len(got), len(want))
	}
	// Its server is the HTTP kind's: `cnibench client --port` moves it.
	if ports := k.ServerPorts(); len(ports) != 1 || ports[0].Name != "http" || len(k.Ports) != 0 {
		t.Errorf("server ports %v, own ports %v: want the http kind's only", ports, k.Ports)
	}
	names := func(ts []kinds.Test) (n []string) {
		for _, t := range ts {
			n = append(n, t.Name)
		}
		return n
	}
	all := names(kinds.Tests())
	if i, j := slices.Index(all, "HTTP_QPS_5000"), slices.Index(all, "FORTIO_RPS_C64"); i < 0 || j != i+1 {
		t.Errorf("fortio's tests do not follow the HTTP kind's: %v", all)
	}
}

// A sample of the fortio kind is written to results.json under its own
// keys, read back as the same types and rendered in a table of its own,
// with the HTTP kind's columns.
func TestResultRoundTripsAndRenders(t *testing.T) {
	addr := startServer(t)
	o := optionsFor(t, addr, Options{Connections: 4}, 200*time.Millisecond)
	o.PortShare = &kinds.PortShare{Index: 0, Count: 2}
	r, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(r.PortShareNote, "not applied") {
		t.Errorf("port share asked, note %q", r.PortShareNote)
	}
	run := &results.Run{SchemaVersion: 1, RunID: "fortio-test", Status: results.StatusComplete,
		Scenarios: []results.Scenario{{Name: ""}},
		Results: []results.Result{{Test: "FORTIO_RPS_SHORT_C64", Options: &r.Options,
			Placement: results.Placement{Path: "pod-to-pod", Node: "other-node", ServerAddr: "127.0.0.1"},
			Samples:   []results.Sample{{Round: 1, Start: r.Start, End: r.End, Result: r}}}}}
	b, err := json.MarshalIndent(run, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"fortio_options": {`, `"fortio": {`, `"engine": "fortio`, `"percentiles": [`} {
		if !bytes.Contains(b, []byte(key)) {
			t.Errorf("results.json lacks %s", key)
		}
	}
	var back results.Run
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	res := back.Results[0]
	got, ok := res.Samples[0].Result.(*Result)
	if _, okOpts := res.Options.(*Options); !ok || !okOpts || res.Kind() != "fortio" {
		t.Fatalf("read back as %T, options %T, kind %q", res.Samples[0].Result, res.Options, res.Kind())
	}
	if got.Requests != r.Requests || got.Latency.Histogram != r.Latency.Histogram || got.Fortio.ActualQPS != r.Fortio.ActualQPS {
		t.Errorf("read back differs: %d requests, want %d", got.Requests, r.Requests)
	}
	again, err := json.MarshalIndent(&back, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again, b) {
		t.Errorf("results.json written again differs:\n%s\nwant\n%s", again, b)
	}

	var out bytes.Buffer
	if err := report.Table(&out, &back); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"FORTIO_RPS_SHORT_C64", "Req/s", "P50 µs", "P99 µs", "Errors %"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
	t.Logf("\n%s", out.String())
}
