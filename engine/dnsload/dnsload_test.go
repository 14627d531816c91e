package dnsload

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"

	"github.com/cnibench/cnibench/engine"
	"github.com/cnibench/cnibench/engine/dnsload/dnsapi"
	"github.com/cnibench/cnibench/engine/kinds"
	"github.com/cnibench/cnibench/stats"
)

func ms(n int) engine.Duration { return engine.Duration(time.Duration(n) * time.Millisecond) }

// target returns Options aimed at s.
func target(s *Server) Options {
	return Options{Server: s.Spec.Listen, Port: s.Spec.Port, NameCount: s.Spec.Names}
}

// checkSane verifies the invariants every result must hold.
func checkSane(t *testing.T, r *Result) {
	t.Helper()
	if r.Responses <= 0 || r.QPS <= 0 {
		t.Fatalf("no responses: %+v", r)
	}
	var codes int64
	for _, n := range r.Rcodes {
		codes += n
	}
	if codes != r.Responses {
		t.Errorf("rcodes sum %d != responses %d", codes, r.Responses)
	}
	if r.OK+r.Errors.Rcode+r.Errors.NoAnswer != r.Responses {
		t.Errorf("ok %d + rcode %d + no answer %d != responses %d", r.OK, r.Errors.Rcode, r.Errors.NoAnswer, r.Responses)
	}
	if r.Errors.Rcode != r.Responses-r.Rcodes["NOERROR"] {
		t.Errorf("rcode errors %d != responses %d - NOERROR %d", r.Errors.Rcode, r.Responses, r.Rcodes["NOERROR"])
	}
	e := r.Errors
	if e.Total != e.Timeout+e.Rcode+e.NoAnswer+e.Send {
		t.Errorf("errors total %d is not the sum of kinds: %+v", e.Total, e)
	}
	// Every query ends once: what was sent in the interval and what ended
	// in it differ by at most the queries in flight at either edge.
	if d := r.Sent - r.Responses - e.Timeout - e.Send; d < -int64(2*r.Outstanding) || d > int64(2*r.Outstanding) {
		t.Errorf("sent %d vs responses %d + timeouts %d + send errors %d (outstanding %d)", r.Sent, r.Responses, e.Timeout, e.Send, r.Outstanding)
	}
	timeout := time.Duration(r.Options.Timeout)
	for _, l := range []*stats.Latency{r.Latency, r.LatencyUncorrected} {
		if l.Count != r.Responses {
			t.Errorf("latency count %d != responses %d", l.Count, r.Responses)
		}
		if !(0 < l.MinUs && l.MinUs <= l.P50Us && l.P50Us <= l.P90Us && l.P90Us <= l.P99Us && l.P99Us <= l.P999Us && l.P999Us <= l.MaxUs) {
			t.Errorf("percentiles out of order: %+v", l)
		}
		if l.MinUs < 1 {
			t.Errorf("min latency %.3f us: below a microsecond over a real socket", l.MinUs)
		}
	}
	// Uncorrected latency is capped by the timeout (later answers are lost).
	if u := r.LatencyUncorrected.MaxUs; u > float64(timeout.Microseconds())*1.001 {
		t.Errorf("uncorrected max %.0f us above the %s timeout", u, timeout)
	}
	if got := float64(r.Responses) / r.Seconds; got != r.QPS {
		t.Errorf("qps %v != responses/seconds %v", r.QPS, got)
	}
	if r.BytesSent < r.Sent*12 || r.BytesReceived < r.Responses*12 {
		t.Errorf("bytes: sent %d for %d queries, received %d for %d responses", r.BytesSent, r.Sent, r.BytesReceived, r.Responses)
	}
	if r.ClientCPUs < 1 || r.ClientCPUUtil <= 0 || r.ClientCPUUserSec+r.ClientCPUSysSec <= 0 {
		t.Errorf("client CPU not measured: cpus %d util %v", r.ClientCPUs, r.ClientCPUUtil)
	}
	if r.ClientSaturated != (r.ClientCPUUtil >= dnsapi.SaturatedUtil) {
		t.Errorf("saturated flag %v inconsistent with util %v", r.ClientSaturated, r.ClientCPUUtil)
	}
	if r.Threads < 1 || r.Threads > r.Outstanding {
		t.Errorf("threads %d (outstanding %d)", r.Threads, r.Outstanding)
	}
	if _, err := json.Marshal(r); err != nil {
		t.Error(err)
	}
}

func TestMaxRate(t *testing.T) {
	s := startServer(t, ServerSpec{Names: 100})
	o := target(s)
	o.Duration, o.Warmup, o.Outstanding, o.Threads = ms(800), ms(200), 32, 2
	r, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	checkSane(t, r)
	if r.Errors.Total != 0 || r.OK != r.Responses || r.Rcodes["NOERROR"] != r.Responses {
		t.Errorf("errors against a healthy server: %+v rcodes %v", r.Errors, r.Rcodes)
	}
	if r.Errors.Late+r.Errors.Stray+r.Errors.Malformed+r.Errors.ICMP != 0 {
		t.Errorf("odd packets against a healthy server: %+v", r.Errors)
	}
	if r.Mode != "max-rate" || r.MissedTarget || r.TargetQPS != 0 || r.Threads != 2 || r.Names != 100 {
		t.Errorf("closed loop reported as %q missed=%v target=%v threads=%d names=%d", r.Mode, r.MissedTarget, r.TargetQPS, r.Threads, r.Names)
	}
	if *r.Latency != *r.LatencyUncorrected {
		t.Errorf("closed loop: corrected and uncorrected latency differ")
	}
	// Even a loaded 2-CPU machine does thousands of loopback queries a
	// second with 32 in flight.
	if r.QPS < 2000 {
		t.Errorf("max rate only %.0f q/s", r.QPS)
	}
	t.Logf("max rate: %.0f q/s, p50 %.0f us, p99 %.0f us, client CPU %.0f%%", r.QPS, r.Latency.P50Us, r.Latency.P99Us, 100*r.ClientCPUUtil)
}

func TestFixedQPS(t *testing.T) {
	s := startServer(t, ServerSpec{Names: 10})
	o := target(s)
	o.Duration, o.Warmup, o.QPS = ms(1000), ms(100), 2000
	rec := &scheduleRecorder{}
	observer = rec
	r, err := Run(context.Background(), o)
	observer = nil
	if err != nil {
		t.Fatal(err)
	}
	checkSane(t, r)
	if r.Mode != "fixed-qps" || r.TargetQPS != 2000 || r.Outstanding != dnsapi.DefaultOpenOutstanding {
		t.Errorf("mode %q target %v outstanding %d", r.Mode, r.TargetQPS, r.Outstanding)
	}
	// Sent and Responses count by the clock, and a loop that waits for a
	// CPU at an edge of the window (a busy host) moves queries across it:
	// 2,050 or 1,945 answers at a load of 3 × the cores. What holds under
	// any load: the schedule asks for 2,000 queries in the 1 s window,
	// every one is sent and answered (or, after a stall at the end, still
	// in flight or not yet sent when the run stops), and the totals are exactly what the
	// clock let through.
	c := rec.counts()
	t.Logf("2000 q/s: %d due, %d answered, %d in flight and %d unsent at the end; %d sent and %d answered in the window (%d answers due before it, %d due in it answered after)",
		c.due, c.dueAnswered, c.dueFlying, c.dueUnsent, c.sentIn, c.answeredIn, c.crossIn, c.crossOut)
	if c.due < 1999 || c.due > 2001 {
		t.Errorf("2000 q/s for 1 s: %d queries due in the window", c.due)
	}
	if c.dueAnswered+c.dueFlying+c.dueUnsent != c.due || r.Errors.Total != 0 {
		t.Errorf("%d of %d due queries answered, %d in flight and %d unsent at the end, errors %+v", c.dueAnswered, c.due, c.dueFlying, c.dueUnsent, r.Errors)
	}
	if r.Sent != c.sentIn || r.Responses != c.answeredIn {
		t.Errorf("sent %d, responses %d; the window saw %d sends and %d answers", r.Sent, r.Responses, c.sentIn, c.answeredIn)
	}
	if missed := float64(r.Responses) < dnsapi.MissedTargetRatio*2000; r.MissedTarget != missed || r.AchievedRatio != r.QPS/2000 {
		t.Errorf("%d responses: missed %v (ratio %.3f), want %v", r.Responses, r.MissedTarget, r.AchievedRatio, missed)
	}
	// Nothing queues at 2000 q/s: the corrected latency stays small, and
	// is never below the uncorrected one.
	if r.Latency.P50Us > 5000 {
		t.Errorf("corrected p50 %.0f us at a trivial rate", r.Latency.P50Us)
	}
	if r.Latency.P50Us < r.LatencyUncorrected.P50Us || r.Latency.MaxUs < r.LatencyUncorrected.MaxUs {
		t.Errorf("corrected latency below uncorrected: %+v vs %+v", r.Latency, r.LatencyUncorrected)
	}
	t.Logf("2000 q/s: p50 %.0f us corrected, %.0f us uncorrected; client CPU %.0f%%", r.Latency.P50Us, r.LatencyUncorrected.P50Us, 100*r.ClientCPUUtil)
}

// TestCoordinatedOmission stops the server for 300 ms in a 2000 q/s open
// loop with at most 4 queries in flight. The stall delays the ~600
// queries due meanwhile: the corrected latency sees it in its tail, the
// uncorrected one only for the 4 queries caught in flight.
func TestCoordinatedOmission(t *testing.T) {
	s := startServer(t, ServerSpec{Names: 10})
	o := target(s)
	o.Duration, o.QPS, o.Outstanding, o.Threads = ms(1000), 2000, 4, 1
	pid := s.Pid()
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGCONT) })
	go func() {
		time.Sleep(300 * time.Millisecond)
		syscall.Kill(pid, syscall.SIGSTOP)
		time.Sleep(300 * time.Millisecond)
		syscall.Kill(pid, syscall.SIGCONT)
	}()
	r, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	checkSane(t, r)
	u, c := r.LatencyUncorrected.P99Us, r.Latency.P99Us
	t.Logf("p99 uncorrected %.0f us, corrected %.0f us; achieved %.3f", u, c, r.AchievedRatio)
	if c < 150000 {
		t.Errorf("corrected p99 %.0f us: a 300 ms stall of 30%% of the run must show", c)
	}
	if c < 5*u {
		t.Errorf("corrected p99 %.0f us not much larger than uncorrected %.0f us: coordinated omission not corrected", c, u)
	}
	if r.LatencyUncorrected.MaxUs < 200000 {
		t.Errorf("uncorrected max %.0f us: the queries in flight during the stall waited ~300 ms", r.LatencyUncorrected.MaxUs)
	}
}

func TestRcodesCounted(t *testing.T) {
	s := startServer(t, ServerSpec{Names: 20})
	o := target(s)
	// Every other name does not exist.
	for i := range 20 {
		o.Names = append(o.Names, s.Spec.Name(i), s.Spec.Name(100+i))
	}
	o.Duration, o.Outstanding, o.Threads = ms(500), 8, 1
	r, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	checkSane(t, r)
	nx := r.Rcodes["NXDOMAIN"]
	if nx == 0 || r.Errors.Rcode != nx || r.OK != r.Rcodes["NOERROR"] {
		t.Fatalf("NXDOMAIN not counted: rcodes %v errors %+v ok %d", r.Rcodes, r.Errors, r.OK)
	}
	if d := nx - r.OK; d < -int64(o.Outstanding)-2 || d > int64(o.Outstanding)+2 {
		t.Errorf("half the names exist: ok %d, NXDOMAIN %d", r.OK, nx)
	}
	if r.Names != 40 || !strings.HasPrefix(r.Errors.First, "NXDOMAIN for svc-1") {
		t.Errorf("first error %q", r.Errors.First)
	}
}

func TestWrongPort(t *testing.T) {
	port := freePort(t) // nothing listens there
	t0 := time.Now()
	_, err := Run(context.Background(), Options{Server: "127.0.0.1", Port: port, RunnerOptions: kinds.RunnerOptions{Duration: ms(500)}})
	if err == nil || !strings.Contains(err.Error(), "connection refused") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("got %v, want a one-line 'connection refused'", err)
	}
	if d := time.Since(t0); d > 500*time.Millisecond {
		t.Errorf("took %s to report a closed port", d)
	}
	t.Log(err)
}

// TestServerGoesAway stops the server mid-run: the queries left without
// an answer count as timeouts (with the ICMP errors that came back), never
// as latency, and the run still reports what was answered.
func TestServerGoesAway(t *testing.T) {
	s := startServer(t, ServerSpec{Names: 10})
	o := target(s)
	o.Duration, o.Outstanding, o.Threads, o.Timeout = ms(1000), 8, 1, ms(100)
	go func() {
		time.Sleep(400 * time.Millisecond)
		s.Stop()
	}()
	r, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	checkSane(t, r)
	if r.Errors.Timeout < int64(o.Outstanding) || r.LossPercent <= 0 {
		t.Errorf("server gone for 600 ms: %d timeouts, loss %.1f%%", r.Errors.Timeout, r.LossPercent)
	}
	if r.Errors.ICMP == 0 {
		t.Errorf("no ICMP port unreachable counted after the server went away: %+v", r.Errors)
	}
	if r.Latency.MaxUs > 100000*1.001 {
		t.Errorf("max latency %.0f us above the 100 ms timeout: a timeout was recorded as latency", r.Latency.MaxUs)
	}
	if r.Errors.First == "" || strings.Contains(r.Errors.First, "\n") {
		t.Errorf("first error %q", r.Errors.First)
	}
	t.Logf("%d answered, %d timeouts, %d ICMP errors, first: %s", r.Responses, r.Errors.Timeout, r.Errors.ICMP, r.Errors.First)
}

func TestCancel(t *testing.T) {
	s := startServer(t, ServerSpec{Names: 10})
	o := target(s)
	o.Duration = engine.Duration(time.Minute)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	t0 := time.Now()
	_, err := Run(ctx, o)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want context.DeadlineExceeded", err)
	}
	if d := time.Since(t0); d > time.Second {
		t.Errorf("cancel took %s", d)
	}
}

func TestOptionErrors(t *testing.T) {
	for _, c := range []struct {
		o    Options
		want string
	}{
		{Options{RunnerOptions: kinds.RunnerOptions{Duration: ms(1)}}, "no server"},
		{Options{Server: "dns.example", RunnerOptions: kinds.RunnerOptions{Duration: ms(1)}}, `server "dns.example" is not an IP address`},
		{Options{Server: "127.0.0.1", Port: 70000, RunnerOptions: kinds.RunnerOptions{Duration: ms(1)}}, "port 70000 out of range"},
		{Options{Server: "127.0.0.1"}, "duration must be positive"},
		{Options{Server: "127.0.0.1", RunnerOptions: kinds.RunnerOptions{Duration: ms(1), Warmup: -1}}, "warmup must not be negative"},
		{Options{Server: "127.0.0.1", RunnerOptions: kinds.RunnerOptions{Duration: ms(1)}, QPS: -5}, "qps must be 0"},
		{Options{Server: "127.0.0.1", RunnerOptions: kinds.RunnerOptions{Duration: ms(1)}, Outstanding: dnsapi.MaxOutstanding + 1}, "outstanding must be in 1..16384"},
		{Options{Server: "127.0.0.1", RunnerOptions: kinds.RunnerOptions{Duration: ms(1)}, Timeout: -1}, "timeout must not be negative"},
		{Options{Server: "127.0.0.1", RunnerOptions: kinds.RunnerOptions{Duration: ms(1)}, Threads: -1}, "threads must be in"},
		{Options{Server: "127.0.0.1", RunnerOptions: kinds.RunnerOptions{Duration: ms(1)}, NameFormat: "svc"}, "exactly one %d"},
		{Options{Server: "127.0.0.1", RunnerOptions: kinds.RunnerOptions{Duration: ms(1)}, NameCount: -3}, "name count must be in"},
		{Options{Server: "127.0.0.1", RunnerOptions: kinds.RunnerOptions{Duration: ms(1)}, Names: []string{"ok.example", ""}}, `bad name ""`},
		{Options{Server: "127.0.0.1", RunnerOptions: kinds.RunnerOptions{Duration: ms(1)}, Names: []string{strings.Repeat("a", 64) + ".example"}}, "bad name"},
	} {
		_, err := Run(context.Background(), c.o)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%+v: got %v, want one line containing %q", c.o, err, c.want)
		}
	}
	o := Options{Server: "::1", RunnerOptions: kinds.RunnerOptions{Duration: ms(1)}}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	if o.Port != 53 || o.Outstanding != dnsapi.DefaultOutstanding || time.Duration(o.Timeout) != time.Second || o.NameCount != DefaultNames || o.NameFormat != dnsapi.DefaultNameFormat {
		t.Errorf("defaults: %+v", o)
	}
	b, _ := json.Marshal(o)
	var back Options
	if err := json.Unmarshal(b, &back); err != nil || back.Timeout != o.Timeout || back.Server != o.Server {
		t.Errorf("JSON round trip: %s -> %+v (%v)", b, back, err)
	}
}

// TestCheck feeds hand-built responses to the validator, and checks it
// does not allocate.
func TestCheck(t *testing.T) {
	query, err := appendQuery(nil, "svc-1.default.svc.cluster.local", 0x1234)
	if err != nil {
		t.Fatal(err)
	}
	if query[0] != 0x12 || query[1] != 0x34 || query[2]&1 != 1 {
		t.Fatalf("query header % x", query[:4])
	}
	name := dnsmessage.MustNewName("svc-1.default.svc.cluster.local.")
	build := func(rcode dnsmessage.RCode, qname dnsmessage.Name, answers ...dnsmessage.ResourceBody) []byte {
		b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: 0x1234, Response: true, RCode: rcode})
		b.EnableCompression()
		b.StartQuestions()
		b.Question(dnsmessage.Question{Name: qname, Type: dnsmessage.TypeA, Class: dnsmessage.ClassINET})
		b.StartAnswers()
		for _, a := range answers {
			h := dnsmessage.ResourceHeader{Name: qname, Class: dnsmessage.ClassINET, TTL: 5}
			switch a := a.(type) {
			case *dnsmessage.AResource:
				b.AResource(h, *a)
			case *dnsmessage.CNAMEResource:
				b.CNAMEResource(h, *a)
			}
		}
		m, err := b.Finish()
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	a := &dnsmessage.AResource{A: [4]byte{198, 18, 128, 2}}
	cname := &dnsmessage.CNAMEResource{CNAME: dnsmessage.MustNewName("other.cluster.local.")}
	other := dnsmessage.MustNewName("svc-2.default.svc.cluster.local.")
	ok := build(dnsmessage.RCodeSuccess, name, a)
	notResponse := append([]byte(nil), ok...)
	notResponse[2] &^= 0x80
	for _, c := range []struct {
		name  string
		resp  []byte
		rcode int
		v     verdict
	}{
		{"A", ok, 0, vOK},
		{"CNAME then A", build(dnsmessage.RCodeSuccess, name, cname, a), 0, vOK},
		{"NODATA", build(dnsmessage.RCodeSuccess, name), 0, vNoAnswer},
		{"CNAME only", build(dnsmessage.RCodeSuccess, name, cname), 0, vNoAnswer},
		{"NXDOMAIN", build(dnsmessage.RCodeNameError, name), 3, vRcode},
		{"SERVFAIL", build(dnsmessage.RCodeServerFailure, name), 2, vRcode},
		{"other question", build(dnsmessage.RCodeSuccess, other, a), 0, vStray},
		{"not a response", notResponse, 0, vMalformed},
		{"truncated answer", ok[:len(ok)-2], 0, vMalformed},
		{"header only", ok[:12], 0, vMalformed},
	} {
		var p dnsmessage.Parser
		rcode, v := check(&p, c.resp, query)
		if v != c.v || (v != vMalformed && v != vStray && rcode != c.rcode) {
			t.Errorf("%s: verdict %d rcode %d, want %d %d", c.name, v, rcode, c.v, c.rcode)
		}
	}
	var p dnsmessage.Parser
	if n := testing.AllocsPerRun(100, func() { check(&p, ok, query) }); n != 0 {
		t.Errorf("check allocates %.0f times per response", n)
	}
	if rcodeName(3) != "NXDOMAIN" || rcodeName(15) != "RCODE15" {
		t.Errorf("rcode names: %s %s", rcodeName(3), rcodeName(15))
	}
}

func TestRing(t *testing.T) {
	var r ring[int]
	r.init(2)
	for i := range 5 {
		r.push(i)
	}
	r.pushFront(-1)
	var got []int
	for r.n > 0 {
		got = append(got, r.pop())
	}
	if want := []int{-1, 0, 1, 2, 3, 4}; len(got) != len(want) || got[0] != -1 || got[5] != 4 {
		t.Errorf("ring order %v, want %v", got, want)
	}
}

// TestNoAllocsPerQuery counts heap allocations in the middle of a max-rate
// run: the event loops must not allocate per query (Run's timers and the
// test itself allocate a little, so the bound is per hundred queries).
func TestNoAllocsPerQuery(t *testing.T) {
	s := startServer(t, ServerSpec{Names: 10})
	o := target(s)
	o.Duration, o.Warmup, o.Outstanding, o.Threads = ms(700), ms(100), 16, 2
	type out struct {
		r   *Result
		err error
	}
	done := make(chan out, 1)
	go func() {
		r, err := Run(context.Background(), o)
		done <- out{r, err}
	}()
	var m0, m1 runtime.MemStats
	time.Sleep(300 * time.Millisecond)
	runtime.ReadMemStats(&m0)
	time.Sleep(300 * time.Millisecond)
	runtime.ReadMemStats(&m1)
	res := <-done
	if res.err != nil {
		t.Fatal(res.err)
	}
	checkSane(t, res.r)
	mallocs := m1.Mallocs - m0.Mallocs
	queries := uint64(float64(res.r.Responses) * 300 / 700)
	t.Logf("%d allocations during ~%d queries", mallocs, queries)
	if queries < 1000 || mallocs > queries/100 {
		t.Errorf("%d allocations during ~%d queries", mallocs, queries)
	}
}

func TestIPv6(t *testing.T) {
	if c, err := net.ListenUDP("udp6", &net.UDPAddr{IP: net.IPv6loopback}); err != nil {
		t.Skipf("no IPv6 loopback: %v", err)
	} else {
		c.Close()
	}
	s := startServer(t, ServerSpec{Listen: "::1", Names: 10})
	o := target(s)
	o.Duration, o.Outstanding = ms(300), 4
	r, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	checkSane(t, r)
	if r.Address != "[::1]:"+strconv.Itoa(s.Spec.Port) || r.OK != r.Responses || r.Errors.Total != 0 {
		t.Errorf("over IPv6: address %s, ok %d of %d, errors %+v", r.Address, r.OK, r.Responses, r.Errors)
	}
}
