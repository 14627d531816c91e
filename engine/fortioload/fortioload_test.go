package fortioload

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/engine/kinds"
)

// checkSane verifies what every result must hold: counts that add up,
// latencies for every response and ordered percentiles.
func checkSane(t *testing.T, r *Result) {
	t.Helper()
	if r.Requests <= 0 || r.RPS <= 0 || r.Seconds <= 0 {
		t.Fatalf("nothing measured: requests %d rps %v seconds %v", r.Requests, r.RPS, r.Seconds)
	}
	var codes int64
	for code, n := range r.StatusCodes {
		if code >= 0 {
			codes += n
		}
	}
	if codes != r.Requests || r.OK+r.Errors.Status != r.Requests {
		t.Errorf("codes %d, ok %d + status errors %d, requests %d", codes, r.OK, r.Errors.Status, r.Requests)
	}
	if r.Errors.Total != r.Errors.Socket+r.Errors.Status {
		t.Errorf("errors total %d is not socket + status: %+v", r.Errors.Total, r.Errors)
	}
	l := r.Latency
	if l.Count != r.Requests {
		t.Errorf("latency count %d != requests %d", l.Count, r.Requests)
	}
	if !(0 < l.MinUs && l.MinUs <= l.P50Us && l.P50Us <= l.P90Us && l.P90Us <= l.P99Us && l.P99Us <= l.MaxUs) {
		t.Errorf("percentiles out of order: %+v", l)
	}
	if got := float64(r.Requests) / r.Seconds; got != r.RPS {
		t.Errorf("rps %v != requests/seconds %v", r.RPS, got)
	}
	if r.Fortio.Calls != r.Requests+r.Errors.Socket {
		t.Errorf("fortio counted %d calls, we %d responses + %d socket errors", r.Fortio.Calls, r.Requests, r.Errors.Socket)
	}
	if r.ClientCPUs < 1 || r.ClientCPUUtil <= 0 {
		t.Errorf("client CPU not measured: cpus %d util %v", r.ClientCPUs, r.ClientCPUUtil)
	}
	if !strings.HasPrefix(r.Engine, "fortio") {
		t.Errorf("engine %q does not name fortio", r.Engine)
	}
}

// fortioBucketUs is the width of fortio's histogram bucket around us
// microseconds at our 1 µs resolution (its buckets are 1, 2, 5, 10, 20,
// 50 and 100 wide up to 1,000, then 1,000 to 25,000).
func fortioBucketUs(us float64) float64 {
	for _, b := range []struct{ below, width float64 }{
		{12, 1}, {20, 2}, {50, 5}, {100, 10}, {200, 20}, {500, 50}, {1000, 100}, {5000, 1000}, {10000, 2500}, {50000, 10000},
	} {
		if us < b.below {
			return b.width
		}
	}
	return 25000
}

// fortioP50 is fortio's own p50 (its bucket-interpolated percentile).
func fortioP50(t *testing.T, r *Result) float64 {
	for _, p := range r.Fortio.Percentiles {
		if p.Percentile == 50 {
			return p.Us
		}
	}
	t.Fatalf("fortio summary without p50: %+v", r.Fortio)
	return 0
}

func TestKeepAliveReusesConnections(t *testing.T) {
	p := startCountingProxy(t, startServer(t))
	r, err := Run(context.Background(), optionsFor(t, p.ln.Addr().String(), Options{Connections: 8, KeepAlive: true}, 500*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	checkSane(t, r)
	if r.Errors.Total != 0 || r.Mode != "max-rate" || r.TargetQPS != 0 {
		t.Errorf("max rate against a healthy server: mode %q target %v errors %+v", r.Mode, r.TargetQPS, r.Errors)
	}
	if n := p.accepted.Load(); n != 8 || r.Sockets != 8 {
		t.Errorf("keep-alive with 8 connections: %d accepted, fortio counted %d sockets", n, r.Sockets)
	}
	// Our percentiles and fortio's come from the same durations: fortio
	// interpolates within the bucket that holds ours.
	ours := r.Latency.P50Us
	if f := fortioP50(t, r); f < ours-fortioBucketUs(ours)-0.01*ours-1 || f > ours+fortioBucketUs(ours)+0.01*ours+1 {
		t.Errorf("p50: ours %.1f µs, fortio's %.1f µs: not in the same %.0f µs bucket", ours, f, fortioBucketUs(ours))
	}
	t.Logf("%s keep-alive c8: %.0f req/s, p50 %.0f µs (fortio %.0f), p99 %.0f µs", r.Engine, r.RPS, r.Latency.P50Us, fortioP50(t, r), r.Latency.P99Us)
}

func TestShortConnectionsOpenOnePerRequest(t *testing.T) {
	p := startCountingProxy(t, startServer(t))
	const c = 8
	r, err := Run(context.Background(), optionsFor(t, p.ln.Addr().String(), Options{Connections: c}, 500*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	checkSane(t, r)
	// One connection per call, and one per connection for fortio's
	// warm-up request before the measured run.
	calls := r.Requests + r.Errors.Socket
	if n := p.accepted.Load(); n < calls || n > calls+2*c {
		t.Errorf("short connections: %d accepted for %d calls", n, calls)
	}
	if r.Sockets < calls || r.Sockets > calls+2*c {
		t.Errorf("short connections: fortio counted %d sockets for %d calls", r.Sockets, calls)
	}
	t.Logf("short c8: %.0f req/s, %d accepted, p50 %.0f µs", r.RPS, p.accepted.Load(), r.Latency.P50Us)
}

func TestFixedQPS(t *testing.T) {
	addr := startServer(t)
	r, err := Run(context.Background(), optionsFor(t, addr, Options{Connections: 4, KeepAlive: true, QPS: 200}, 2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	checkSane(t, r)
	// fortio schedules exactly QPS × duration calls; its run ends with the
	// last one's response, a little after the 2 s.
	if r.Requests < 392 || r.Requests > 400 {
		t.Errorf("200 QPS for 2 s: %d requests", r.Requests)
	}
	if r.Mode != "fixed-qps" || r.TargetQPS != 200 || r.AchievedRatio < 0.9 || r.AchievedRatio > 1.01 || r.MissedTarget != (r.AchievedRatio < MissedTargetRatio) {
		t.Errorf("mode %q target %v ratio %.3f missed %v", r.Mode, r.TargetQPS, r.AchievedRatio, r.MissedTarget)
	}
}

func TestWarmupIsNotMeasured(t *testing.T) {
	addr := startServer(t)
	o := optionsFor(t, addr, Options{Connections: 4, KeepAlive: true}, 300*time.Millisecond)
	o.Warmup = kinds.Duration(400 * time.Millisecond)
	t0 := time.Now()
	r, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	checkSane(t, r)
	if r.Seconds < 0.3 || r.Seconds > 0.5 {
		t.Errorf("measured %.3f s of a 300 ms run after 400 ms warm-up", r.Seconds)
	}
	if d := r.Start.Sub(t0); d < 400*time.Millisecond {
		t.Errorf("measured run started %s after Run, inside the 400 ms warm-up", d)
	}
}

func TestServerAbsentCountsErrors(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	r, err := Run(context.Background(), optionsFor(t, addr, Options{Connections: 2, KeepAlive: true}, 200*time.Millisecond))
	if err != nil {
		t.Fatalf("a refused server must give a result with errors, got %v", err)
	}
	if r.Requests != 0 || r.Errors.Socket == 0 || r.Errors.Total != r.Errors.Socket || r.StatusCodes[-1] != r.Errors.Socket {
		t.Errorf("server absent: %d requests, codes %v, errors %+v", r.Requests, r.StatusCodes, r.Errors)
	}
	if r.Errors.First != socketError || r.Latency.Count != 0 || r.RPS != 0 {
		t.Errorf("server absent: first %q, %d latencies, %v req/s", r.Errors.First, r.Latency.Count, r.RPS)
	}
	k, _ := kinds.Lookup("fortio")
	if err := k.Check(r); err == nil || !strings.Contains(err.Error(), "no HTTP response") || strings.Contains(err.Error(), "\n") {
		t.Errorf("check of a sample without responses: %v", err)
	}
}

func TestNon2xxAreErrors(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	r, err := Run(context.Background(), optionsFor(t, srv.Listener.Addr().String(), Options{Connections: 2, KeepAlive: true}, 200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	checkSane(t, r)
	if r.OK != 0 || r.Errors.Status != r.Requests || r.StatusCodes[503] != r.Requests || r.Errors.First != "HTTP 503" {
		t.Errorf("503s: ok %d, codes %v, errors %+v", r.OK, r.StatusCodes, r.Errors)
	}
	k, _ := kinds.Lookup("fortio")
	for _, v := range k.Read("FORTIO_RPS_C64", r).Values {
		if v.Name == kinds.MetricErrors && v.V != 100 {
			t.Errorf("errors metric %.1f%%, want 100%% for only 503s", v.V)
		}
	}
}

func TestCancel(t *testing.T) {
	addr := startServer(t)
	for _, o := range []Options{
		{Connections: 4, KeepAlive: true},
		{Connections: 4, KeepAlive: true, QPS: 1}, // waiting for a far slot
	} {
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(200*time.Millisecond, cancel)
		t0 := time.Now()
		_, err := Run(ctx, optionsFor(t, addr, o, 10*time.Second))
		if !errors.Is(err, context.Canceled) {
			t.Errorf("qps %v: want context.Canceled, got %v", o.QPS, err)
		}
		if d := time.Since(t0); d > time.Second {
			t.Errorf("qps %v: cancel took %s", o.QPS, d-200*time.Millisecond)
		}
	}
}

func TestValidate(t *testing.T) {
	good := Options{Host: "10.0.0.1", RunnerOptions: kinds.RunnerOptions{Duration: kinds.Duration(time.Second)}}
	for _, c := range []struct {
		edit func(*Options)
		want string
	}{
		{func(o *Options) { o.Host = "" }, "no target host"},
		{func(o *Options) { o.Port = 70000 }, "port 70000"},
		{func(o *Options) { o.Path = "x y" }, "path"},
		{func(o *Options) { o.Duration = 0 }, "duration must be positive"},
		{func(o *Options) { o.Connections = -1 }, "connections"},
		{func(o *Options) { o.QPS = -5 }, "qps"},
		{func(o *Options) { o.Timeout = -1 }, "timeout"},
		{func(o *Options) { o.PortShare = &kinds.PortShare{Index: 2, Count: 2} }, "port share"},
	} {
		o := good
		c.edit(&o)
		err := o.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "fortio: ") || strings.Contains(err.Error(), "\n") {
			t.Errorf("want a one-line fortio error with %q, got %v", c.want, err)
		}
	}
	o := good
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	if o.Port != DefaultPort || o.Path != "/" || o.Connections != DefaultConnections || o.Timeout != kinds.Duration(DefaultTimeout) {
		t.Errorf("defaults not filled: %+v", o)
	}
	if got := o.URL(); got != "http://10.0.0.1:8080/" {
		t.Errorf("url %q", got)
	}
}
