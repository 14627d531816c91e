package httpload

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cnibench/cnibench/engine"
	"github.com/cnibench/cnibench/engine/internal/servetest"
	"github.com/cnibench/cnibench/engine/kinds"
	"github.com/cnibench/cnibench/stats"
)

// startServer runs s on 127.0.0.1 on a free port until the test ends and
// returns its URL.
func startServer(t *testing.T, s *Server) string {
	t.Helper()
	s.Bind, s.Port = "127.0.0.1", -1
	if err := s.Listen(); err != nil {
		t.Fatal(err)
	}
	servetest.Serve(t, s.Serve)
	<-s.Ready()
	return "http://" + s.Addr().String() + "/"
}

func ms(n int) engine.Duration { return engine.Duration(time.Duration(n) * time.Millisecond) }

// checkSane verifies the invariants every result must hold.
func checkSane(t *testing.T, r *Result) {
	t.Helper()
	if r.Requests <= 0 || r.RPS <= 0 {
		t.Fatalf("no requests: %+v", r)
	}
	if r.OK+r.Errors.Status != r.Requests {
		t.Errorf("ok %d + status errors %d != requests %d", r.OK, r.Errors.Status, r.Requests)
	}
	var codes int64
	for _, n := range r.StatusCodes {
		codes += n
	}
	if codes != r.Requests {
		t.Errorf("status codes sum %d != requests %d", codes, r.Requests)
	}
	e := r.Errors
	if e.Total != e.Connect+e.Timeout+e.Status+e.ShortRead+e.Protocol {
		t.Errorf("errors total %d is not the sum of kinds: %+v", e.Total, e)
	}
	for _, l := range []*stats.Latency{r.Latency, r.LatencyUncorrected} {
		if l.Count != r.Requests {
			t.Errorf("latency count %d != requests %d", l.Count, r.Requests)
		}
		if !(0 < l.MinUs && l.MinUs <= l.P50Us && l.P50Us <= l.P90Us && l.P90Us <= l.P99Us && l.P99Us <= l.P999Us && l.P999Us <= l.MaxUs) {
			t.Errorf("percentiles out of order: %+v", l)
		}
	}
	if got := float64(r.Requests) / r.Seconds; got != r.RPS {
		t.Errorf("rps %v != requests/seconds %v", r.RPS, got)
	}
	if r.ClientCPUs < 1 || r.ClientCPUUtil <= 0 || r.ClientCPUUserSec+r.ClientCPUSysSec <= 0 {
		t.Errorf("client CPU not measured: cpus %d util %v", r.ClientCPUs, r.ClientCPUUtil)
	}
	if r.ClientSaturated != (r.ClientCPUUtil >= SaturatedUtil) {
		t.Errorf("saturated flag %v inconsistent with util %v", r.ClientSaturated, r.ClientCPUUtil)
	}
	if _, err := json.Marshal(r); err != nil {
		t.Error(err)
	}
}

func TestMaxRateKeepAlive(t *testing.T) {
	url := startServer(t, &Server{})
	r, err := Run(context.Background(), Options{URL: url, RunnerOptions: kinds.RunnerOptions{Duration: ms(500), Warmup: ms(100)}, Connections: 8, KeepAlive: true})
	if err != nil {
		t.Fatal(err)
	}
	checkSane(t, r)
	if r.Errors.Total != 0 || r.OK != r.Requests {
		t.Errorf("errors against a healthy server: %+v", r.Errors)
	}
	if r.Connects != 0 {
		t.Errorf("keep-alive connections opened during the measured interval: %d (all should be opened in warmup)", r.Connects)
	}
	if r.BytesReceived < r.Requests*512 || r.BytesSent < r.Requests*20 {
		t.Errorf("bytes: sent %d received %d for %d requests", r.BytesSent, r.BytesReceived, r.Requests)
	}
	if r.Mode != "max-rate" || r.MissedTarget || r.TargetQPS != 0 {
		t.Errorf("closed loop reported as %q missed=%v target=%v", r.Mode, r.MissedTarget, r.TargetQPS)
	}
	if *r.Latency != *r.LatencyUncorrected {
		t.Errorf("closed loop: corrected and uncorrected latency differ")
	}
	t.Logf("keep-alive: %.0f req/s, p50 %.0f us, p99 %.0f us, client CPU %.0f%%", r.RPS, r.Latency.P50Us, r.Latency.P99Us, 100*r.ClientCPUUtil)
}

func TestMaxRateShortConnection(t *testing.T) {
	url := startServer(t, &Server{ResponseSize: 100})
	r, err := Run(context.Background(), Options{URL: url, RunnerOptions: kinds.RunnerOptions{Duration: ms(500), Warmup: ms(100)}, Connections: 8, RequestSize: 300})
	if err != nil {
		t.Fatal(err)
	}
	checkSane(t, r)
	if r.Errors.Total != 0 {
		t.Errorf("errors against a healthy server: %+v", r.Errors)
	}
	// A connection per request: connects are counted by start time and
	// requests by end time, so they differ by at most the concurrency.
	if d := r.Connects - r.Requests; d < -8 || d > 8 {
		t.Errorf("short connections: %d connects for %d requests", r.Connects, r.Requests)
	}
	if r.BytesSent < r.Requests*300 {
		t.Errorf("POST bodies not sent: %d bytes for %d requests", r.BytesSent, r.Requests)
	}
	t.Logf("short connections: %.0f req/s, p50 %.0f us", r.RPS, r.Latency.P50Us)
}

func TestFixedQPS(t *testing.T) {
	url := startServer(t, &Server{})
	r, err := Run(context.Background(), Options{URL: url, RunnerOptions: kinds.RunnerOptions{Duration: ms(1000), Warmup: ms(100)}, Connections: 4, KeepAlive: true, QPS: 200})
	if err != nil {
		t.Fatal(err)
	}
	checkSane(t, r)
	if r.Mode != "fixed-qps" || r.TargetQPS != 200 {
		t.Errorf("mode %q target %v", r.Mode, r.TargetQPS)
	}
	if r.Requests < 196 || r.Requests > 204 || r.MissedTarget {
		t.Errorf("200 QPS for 1 s: %d requests, ratio %.3f, missed %v", r.Requests, r.AchievedRatio, r.MissedTarget)
	}
	// Nothing queues at 200 QPS: the corrected latency stays small.
	if r.Latency.P50Us > 5000 {
		t.Errorf("corrected p50 %.0f us at a trivial rate", r.Latency.P50Us)
	}
}

// TestCoordinatedOmission drives a server that can do 2 connections × 1 /
// 5 ms = 400 req/s at 2000 QPS. A closed-loop measurement only sees the
// 5 ms service time; the corrected one sees the queue the schedule built
// up (hundreds of ms by the end).
func TestCoordinatedOmission(t *testing.T) {
	url := startServer(t, &Server{Delay: 5 * time.Millisecond})
	r, err := Run(context.Background(), Options{URL: url, RunnerOptions: kinds.RunnerOptions{Duration: ms(1000)}, Connections: 2, KeepAlive: true, QPS: 2000})
	if err != nil {
		t.Fatal(err)
	}
	checkSane(t, r)
	if !r.MissedTarget || r.AchievedRatio > 0.5 || r.MissedByPercent < 50 {
		t.Errorf("overloaded server not flagged: ratio %.3f missed %v by %.1f%%", r.AchievedRatio, r.MissedTarget, r.MissedByPercent)
	}
	u, c := r.LatencyUncorrected.P99Us, r.Latency.P99Us
	t.Logf("p99 uncorrected %.0f us, corrected %.0f us", u, c)
	if u < 5000 || u > 100000 {
		t.Errorf("uncorrected p99 %.0f us, want about the 5 ms service time", u)
	}
	if c < 10*u {
		t.Errorf("corrected p99 %.0f us not much larger than uncorrected %.0f us: coordinated omission not corrected", c, u)
	}
}

func TestStatusAndChunked(t *testing.T) {
	var calls sync.Map
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Store(r.URL.Path, true)
		if r.URL.Path == "/chunked" {
			w.Write([]byte("part one "))
			w.(http.Flusher).Flush() // forces chunked encoding
			w.Write([]byte("part two"))
			return
		}
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer hs.Close()
	for _, ka := range []bool{true, false} {
		r, err := Run(context.Background(), Options{URL: hs.URL + "/busy", RunnerOptions: kinds.RunnerOptions{Duration: ms(300)}, Connections: 4, KeepAlive: ka})
		if err != nil {
			t.Fatal(err)
		}
		checkSane(t, r)
		if r.OK != 0 || r.Errors.Status != r.Requests || r.StatusCodes[503] != r.Requests || r.Errors.Total != r.Errors.Status {
			t.Errorf("keepalive=%v: 503s not counted: %+v codes %v", ka, r.Errors, r.StatusCodes)
		}
		if !strings.Contains(r.Errors.First, "503") {
			t.Errorf("first error %q", r.Errors.First)
		}
		r, err = Run(context.Background(), Options{URL: hs.URL + "/chunked", RunnerOptions: kinds.RunnerOptions{Duration: ms(300)}, Connections: 4, KeepAlive: ka})
		if err != nil {
			t.Fatal(err)
		}
		checkSane(t, r)
		if r.Errors.Total != 0 {
			t.Errorf("keepalive=%v: chunked responses: %+v", ka, r.Errors)
		}
	}
}

func TestConnectionErrors(t *testing.T) {
	s := &Server{Bind: "127.0.0.1", Port: -1}
	if err := s.Listen(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx) }()
	time.AfterFunc(300*time.Millisecond, cancel) // the server goes away mid-run
	r, err := Run(context.Background(), Options{URL: "http://" + s.Addr().String() + "/", RunnerOptions: kinds.RunnerOptions{Duration: ms(700)}, Connections: 4, KeepAlive: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	if r.Requests == 0 || r.Errors.Connect == 0 {
		t.Fatalf("want requests, then connect errors: %d requests, %+v", r.Requests, r.Errors)
	}
	if !strings.Contains(r.Errors.First, "refused") && !strings.Contains(r.Errors.First, "reset") && !strings.Contains(r.Errors.First, "EOF") {
		t.Errorf("first error %q", r.Errors.First)
	}
	// Closed loop backs off after a failed connect: not a busy loop.
	if max := int64(4 * 0.4 / connectBackoff.Seconds() * 1.5); r.Errors.Connect > max {
		t.Errorf("%d connect errors in 0.4 s on 4 connections: no backoff", r.Errors.Connect)
	}
	t.Logf("%d requests, errors %+v", r.Requests, r.Errors)
}

func TestTimeout(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var mu sync.Mutex
	var held []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c) // never answered
			mu.Unlock()
		}
	}()
	defer func() {
		mu.Lock()
		for _, c := range held {
			c.Close()
		}
		mu.Unlock()
	}()
	r, err := Run(context.Background(), Options{URL: "http://" + ln.Addr().String() + "/", RunnerOptions: kinds.RunnerOptions{Duration: ms(500)}, Connections: 3, KeepAlive: true, Timeout: ms(100)})
	if err != nil {
		t.Fatal(err)
	}
	// 3 connections time out every 100 ms: ~12-15 in 0.5 s.
	if r.Requests != 0 || r.Errors.Timeout < 9 || r.Errors.Timeout > 18 || r.Errors.Total != r.Errors.Timeout {
		t.Errorf("silent server: %d requests, errors %+v", r.Requests, r.Errors)
	}
}

func TestRefusedIsFastAndOneLine(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	t0 := time.Now()
	_, err = Run(context.Background(), Options{URL: "http://" + addr + "/", RunnerOptions: kinds.RunnerOptions{Duration: ms(5000)}, KeepAlive: true})
	if err == nil {
		t.Fatal("no error from a closed port")
	}
	if d := time.Since(t0); d > time.Second {
		t.Errorf("refused connection took %s", d)
	}
	msg := err.Error()
	if strings.Contains(msg, "\n") || !strings.Contains(msg, addr) || !strings.Contains(msg, "refused") {
		t.Errorf("error %q: want one line naming %s", msg, addr)
	}
}

func TestCancel(t *testing.T) {
	url := startServer(t, &Server{})
	for _, o := range []Options{
		{URL: url, RunnerOptions: kinds.RunnerOptions{Duration: ms(10000)}, Connections: 4, KeepAlive: true},
		{URL: url, RunnerOptions: kinds.RunnerOptions{Duration: ms(10000)}, Connections: 4, QPS: 1}, // waiting for a far slot
	} {
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(200*time.Millisecond, cancel)
		t0 := time.Now()
		_, err := Run(ctx, o)
		if !errors.Is(err, context.Canceled) {
			t.Errorf("want context.Canceled, got %v", err)
		}
		if d := time.Since(t0); d > 400*time.Millisecond {
			t.Errorf("cancel took %s", d-200*time.Millisecond)
		}
	}
}

func openFDs(t *testing.T) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd")
	}
	return len(ents)
}

func TestNoLeaks(t *testing.T) {
	// Warm the runtime and net package up so that their lazily started
	// goroutines and descriptors are not counted.
	func() {
		url := startServer(t, &Server{})
		Run(context.Background(), Options{URL: url, RunnerOptions: kinds.RunnerOptions{Duration: ms(50)}, Connections: 2, KeepAlive: true})
	}()
	time.Sleep(50 * time.Millisecond)
	g0, f0 := runtime.NumGoroutine(), openFDs(t)
	func() {
		s := &Server{Bind: "127.0.0.1", Port: -1}
		if err := s.Listen(); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- s.Serve(ctx) }()
		url := "http://" + s.Addr().String() + "/"
		for _, o := range []Options{
			{URL: url, RunnerOptions: kinds.RunnerOptions{Duration: ms(200)}, Connections: 8, KeepAlive: true},
			{URL: url, RunnerOptions: kinds.RunnerOptions{Duration: ms(200)}, Connections: 8},
			{URL: url, RunnerOptions: kinds.RunnerOptions{Duration: ms(200)}, Connections: 8, QPS: 500},
		} {
			if _, err := Run(context.Background(), o); err != nil {
				t.Fatal(err)
			}
		}
		cctx, ccancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		Run(cctx, Options{URL: url, RunnerOptions: kinds.RunnerOptions{Duration: ms(5000)}, Connections: 8, KeepAlive: true})
		ccancel()
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}()
	var g1, f1 int
	for range 50 { // closes and goroutine exits settle asynchronously
		g1, f1 = runtime.NumGoroutine(), openFDs(t)
		if g1 <= g0 && f1 <= f0 {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Errorf("leak: goroutines %d -> %d, fds %d -> %d", g0, g1, f0, f1)
}

// TestParser feeds responses in every split and checks what is consumed.
func TestParser(t *testing.T) {
	cases := []struct {
		name, in   string
		status     int
		closeAfter bool
		eofNeeded  bool
	}{
		{"content-length", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", 200, false, false},
		{"zero length", "HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n", 404, false, false},
		{"chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\na\r\n0123456789\r\n0\r\nTrailer: x\r\n\r\n", 200, false, false},
		{"close", "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok", 200, true, false},
		{"http/1.0", "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok", 200, true, false},
		{"http/1.0 keep-alive", "HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 2\r\n\r\nok", 200, false, false},
		{"until eof", "HTTP/1.1 200 OK\r\n\r\nbody until close", 200, true, true},
		{"100 continue", "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 1\r\n\r\nx", 201, false, false},
		{"204", "HTTP/1.1 204 No Content\r\n\r\n", 204, false, false},
	}
	for _, tc := range cases {
		for split := 1; split <= len(tc.in); split++ {
			rd := reader{buf: make([]byte, 8)} // tiny: exercises growth and compaction
			var p respParser
			in := tc.in + "NEXT" // a following response must not be consumed
			if tc.eofNeeded {
				in = tc.in
			}
			done := false
			var err error
			for pos := 0; !done && err == nil; {
				if pos >= len(in) {
					if !tc.eofNeeded {
						t.Fatalf("%s split %d: not done at end of input", tc.name, split)
					}
					done, err = p.feed(&rd, true)
					break
				}
				end := min(pos+split, len(in))
				for pos < end {
					if e := rd.makeRoom(); e != nil {
						t.Fatal(e)
					}
					n := copy(rd.buf[rd.w:], in[pos:end])
					rd.w += n
					pos += n
				}
				done, err = p.feed(&rd, false)
			}
			if err != nil || !done {
				t.Fatalf("%s split %d: done %v err %v", tc.name, split, done, err)
			}
			if p.status != tc.status || p.closeAfter != tc.closeAfter {
				t.Errorf("%s split %d: status %d close %v", tc.name, split, p.status, p.closeAfter)
			}
			if !tc.eofNeeded && !strings.HasPrefix("NEXT", string(rd.buf[rd.r:rd.w])) {
				t.Errorf("%s split %d: left %q", tc.name, split, rd.buf[rd.r:rd.w])
			}
		}
	}
	for _, bad := range []string{"HTTP/2 200 OK\r\n\r\n", "HTTP/1.1 2x0 OK\r\n\r\n", "HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "HTTP/1.1 200 OK\r\nBad header\r\n\r\n"} {
		rd := reader{buf: []byte(bad), w: len(bad)}
		var p respParser
		var pe *protoError
		if _, err := p.feed(&rd, false); !errors.As(err, &pe) {
			t.Errorf("%q: want a protocol error, got %v", bad, err)
		}
	}
	rd := reader{buf: []byte("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc"), w: 41}
	var p respParser
	if _, err := p.feed(&rd, true); err != io.ErrUnexpectedEOF {
		t.Errorf("short body at EOF: %v", err)
	}
}

// TestServerProtocol talks to the server directly: pipelining, POST bodies,
// 100-continue, HTTP/1.0, Connection: close, bad requests, and net/http as
// a client.
func TestServerProtocol(t *testing.T) {
	url := startServer(t, &Server{ResponseSize: 7})
	addr := strings.TrimSuffix(strings.TrimPrefix(url, "http://"), "/")
	dial := func() (net.Conn, *bufio.Reader) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(5 * time.Second))
		t.Cleanup(func() { c.Close() })
		return c, bufio.NewReader(c)
	}
	readResp := func(br *bufio.Reader) *http.Response {
		t.Helper()
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode == 200 && string(b) != "xxxxxxx" {
			t.Errorf("body %q", b)
		}
		return resp
	}
	// Pipelined: three requests in one write, one with a body.
	c, br := dial()
	fmt.Fprintf(c, "GET /a HTTP/1.1\r\nHost: x\r\n\r\nPOST /b HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhelloGET /c HTTP/1.1\r\nHost: x\r\n\r\n")
	for range 3 {
		if r := readResp(br); r.StatusCode != 200 || r.Close {
			t.Errorf("pipelined: %d close=%v", r.StatusCode, r.Close)
		}
	}
	// 100-continue, then the body.
	fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n")
	if l, _ := br.ReadString('\n'); !strings.HasPrefix(l, "HTTP/1.1 100") {
		t.Fatalf("no 100 Continue: %q", l)
	}
	br.ReadString('\n')
	fmt.Fprintf(c, "abc")
	readResp(br)
	// Connection: close closes after the response.
	fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
	if r := readResp(br); !r.Close {
		t.Error("Connection: close not honoured")
	}
	if _, err := br.ReadByte(); err != io.EOF {
		t.Errorf("connection not closed: %v", err)
	}
	// HTTP/1.0 without keep-alive closes; with it, stays open.
	c, br = dial()
	fmt.Fprintf(c, "GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
	if r := readResp(br); r.Close {
		t.Error("HTTP/1.0 keep-alive closed")
	}
	fmt.Fprintf(c, "GET / HTTP/1.0\r\n\r\n")
	readResp(br)
	if _, err := br.ReadByte(); err != io.EOF {
		t.Errorf("HTTP/1.0 connection not closed: %v", err)
	}
	// Garbage gets 400 and a close; chunked request bodies get 411.
	for req, code := range map[string]int{"NONSENSE\r\n\r\n": 400, "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n": 411} {
		c, br = dial()
		fmt.Fprint(c, req)
		if r := readResp(br); r.StatusCode != code {
			t.Errorf("%q: status %d, want %d", req, r.StatusCode, code)
		}
	}
	// net/http as a client.
	hc := &http.Client{Timeout: 5 * time.Second}
	defer hc.CloseIdleConnections()
	for range 3 {
		resp, err := hc.Post(url+"any/path", "text/plain", strings.NewReader("body"))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(b) != "xxxxxxx" {
			t.Errorf("net/http: %d %q", resp.StatusCode, b)
		}
	}
}

func TestServerErrors(t *testing.T) {
	s := &Server{Port: 70000}
	if err := s.Listen(); err == nil || strings.Contains(err.Error(), "\n") {
		t.Errorf("bad port: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	s = &Server{Bind: "127.0.0.1", Port: ln.Addr().(*net.TCPAddr).Port}
	err = s.Listen()
	if err == nil || !strings.Contains(err.Error(), "address already in use") || strings.Contains(err.Error(), "\n") {
		t.Errorf("port in use: %v", err)
	}
	// Serve returns promptly on cancel even with idle keep-alive clients.
	url := ""
	s = &Server{Bind: "127.0.0.1", Port: -1, Work: 100 * time.Microsecond}
	if err := s.Listen(); err != nil {
		t.Fatal(err)
	}
	url = "http://" + s.Addr().String() + "/"
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx) }()
	c, err := net.Dial("tcp", strings.TrimPrefix(strings.TrimSuffix(url, "/"), "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "GET / HTTP/1.1\r\n\r\n")
	if _, err := http.ReadResponse(bufio.NewReader(c), nil); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	cancel()
	if err := <-done; err != nil || time.Since(t0) > time.Second {
		t.Errorf("Serve after cancel: %v after %s", err, time.Since(t0))
	}
}

// The timeline cuts the measured interval in buckets: at a fixed 200 QPS
// for 1 s, four 250 ms buckets of about 50 requests that add up to the
// sample's; against an overloaded server the corrected p99 of each bucket
// grows as the schedule's queue does.
func TestTimeline(t *testing.T) {
	url := startServer(t, &Server{})
	r, err := Run(context.Background(), Options{URL: url, RunnerOptions: kinds.RunnerOptions{Duration: ms(1000), Warmup: ms(100)}, Connections: 4, KeepAlive: true, QPS: 200})
	if err != nil {
		t.Fatal(err)
	}
	tl := r.Timeline
	if tl == nil || tl.BucketMs != 250 || len(tl.Requests) != 4 || len(tl.Errors) != 4 || len(tl.P99Ms) != 4 {
		t.Fatalf("timeline %+v, want 4 buckets of 250 ms", tl)
	}
	var sum int64
	for i, n := range tl.Requests {
		sum += n
		if n < 40 || n > 60 || tl.Errors[i] != 0 || tl.P99Ms[i] <= 0 {
			t.Errorf("bucket %d: %d requests, %d errors, p99 %g ms; want about 50, none, a p99", i, n, tl.Errors[i], tl.P99Ms[i])
		}
	}
	if sum != r.Requests {
		t.Errorf("buckets add up to %d requests, the sample has %d", sum, r.Requests)
	}

	slow := startServer(t, &Server{Delay: 5 * time.Millisecond})
	r, err = Run(context.Background(), Options{URL: slow, RunnerOptions: kinds.RunnerOptions{Duration: ms(1000)}, Connections: 2, KeepAlive: true, QPS: 2000})
	if err != nil {
		t.Fatal(err)
	}
	p := r.Timeline.P99Ms
	if len(p) != 4 || p[3] < 3*p[0] {
		t.Errorf("overloaded server: bucket p99s %v ms, want the last well above the first (the queue grows)", p)
	}
}
