package agent

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cnibench/cnibench/engine"
	"github.com/cnibench/cnibench/engine/dnsload"
	"github.com/cnibench/cnibench/engine/httpload"
	"github.com/cnibench/cnibench/engine/kinds"
)

// countingRunners stand in for every engine behind the real routes: they
// count the runs started, hold each for hold (or until cancelled) and keep
// the options of the last one.
type countingRunners struct {
	started atomic.Int32
	hold    time.Duration
	last    atomic.Value // the options of the last run
}

func (c *countingRunners) runners() *runners {
	return &runners{kind: func(ctx context.Context, _ kinds.Kind, o any) (any, error) {
		c.begin(ctx, o)
		switch o := o.(type) {
		case *engine.Options:
			return &engine.Result{Test: o.Test, Options: *o, Transactions: 7}, nil
		case *httpload.Options:
			return &httpload.Result{Options: *o, Requests: 7}, nil
		case *dnsload.Options:
			return &dnsload.Result{Options: *o}, nil
		}
		return o, nil
	}}
}

func (c *countingRunners) begin(ctx context.Context, o any) {
	c.started.Add(1)
	c.last.Store(o)
	select {
	case <-time.After(c.hold):
	case <-ctx.Done():
	}
}

// serveLimited serves the agent's real routes (token "tok") on loopback
// with limits l and the counting runners, and returns the address.
func serveLimited(t *testing.T, c *countingRunners, l limits) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	h := &handler{token: "tok", ctx: ctx, run: c.runners(), lim: l}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := newControlServer(h.routes(), h.limits())
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() {
		cancel()
		srv.Close()
		h.busy.Lock() // the detached run has ended
		h.busy.Unlock()
	})
	return ln.Addr().String()
}

// withAuth sends one request with exactly auth as its Authorization
// header (none if empty) and returns the status and WWW-Authenticate.
func withAuth(t *testing.T, addr, method, path, body, auth string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, "http://"+addr+path, strings.NewReader(body))
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("WWW-Authenticate")
}

// A missing or wrong token, or the right one without its scheme, is 401
// with the scheme to use, on every route, and starts no run.
func TestTokenRefusedStartsNothing(t *testing.T) {
	c := &countingRunners{}
	addr := serveLimited(t, c, defaultLimits)
	bodies := map[string]string{pathRR: rrBody, pathHTTP: `{"host":"127.0.0.1","duration":"1s"}`,
		pathDNS: `{"server":"127.0.0.1","duration":"1s"}`, PathKind + "stream": rrBody}
	for _, auth := range []string{"", "Bearer wrong", "tok", "Bearer tok2", "Bearer  tok", "bearer tok", "Basic dG9rOg=="} {
		for path, body := range bodies {
			if status, scheme := withAuth(t, addr, "POST", path, body, auth); status != http.StatusUnauthorized || !strings.HasPrefix(scheme, "Bearer") {
				t.Errorf("POST %s with Authorization %q: %d, WWW-Authenticate %q; want 401 asking for Bearer", path, auth, status, scheme)
			}
		}
		for _, path := range []string{PathHealth, PathSysctls, PathResult + "x"} {
			if status, _ := withAuth(t, addr, "GET", path, "", auth); status != http.StatusUnauthorized {
				t.Errorf("GET %s with Authorization %q: %d, want 401", path, auth, status)
			}
		}
	}
	if n := c.started.Load(); n != 0 {
		t.Fatalf("%d runs started by unauthenticated requests, want 0", n)
	}
	// The right token runs: the refusals above were the token's doing.
	if got := raw(t, addr, "POST", pathRR, rrBody, "tok"); got.status != http.StatusOK || c.started.Load() != 1 {
		t.Fatalf("with the token: %d %s, %d runs; want 200 and 1 run", got.status, got.body, c.started.Load())
	}
}

// A body over the limit is 413 naming the limit; anything after the
// options is 400; neither starts a run. A body of options padded to just
// under the limit still runs.
func TestBodyLimit(t *testing.T) {
	c := &countingRunners{}
	addr := serveLimited(t, c, defaultLimits)
	huge := `{"test":"TCP_RR","host":"` + strings.Repeat("a", 100<<10) + `","duration":"1s"}`
	if got := raw(t, addr, "POST", pathRR, huge, "tok"); got.status != http.StatusRequestEntityTooLarge || !strings.Contains(string(got.body), "limit of 65536 bytes") {
		t.Errorf("100 KiB body: %d %q, want 413 naming the 65536-byte limit", got.status, short(got.body))
	}
	padded := rrBody + strings.Repeat(" ", 70<<10) // the excess after the options counts too
	if got := raw(t, addr, "POST", pathRR, padded, "tok"); got.status != http.StatusRequestEntityTooLarge {
		t.Errorf("options + 70 KiB of spaces: %d %q, want 413", got.status, short(got.body))
	}
	for _, body := range []string{rrBody + rrBody, rrBody + " x", rrBody + "]"} {
		if got := raw(t, addr, "POST", pathRR, body, "tok"); got.status != http.StatusBadRequest || !strings.Contains(string(got.body), "after the options") {
			t.Errorf("body %q: %d %q, want 400 about data after the options", body, got.status, short(got.body))
		}
	}
	if n := c.started.Load(); n != 0 {
		t.Fatalf("%d runs started by refused bodies, want 0", n)
	}
	under := rrBody + strings.Repeat("\n", 60<<10)
	if got := raw(t, addr, "POST", pathRR, under, "tok"); got.status != http.StatusOK || c.started.Load() != 1 {
		t.Fatalf("60 KiB body: %d %q, %d runs; want 200 and 1 run", got.status, short(got.body), c.started.Load())
	}
}

// short is the start of an answer, for messages.
func short(b []byte) string {
	if len(b) > 120 {
		return string(b[:120]) + "..."
	}
	return string(b)
}

// fastLimits make the time limits visible in a test.
var fastLimits = limits{readHeader: 200 * time.Millisecond, read: 400 * time.Millisecond, idle: 400 * time.Millisecond, body: 64 << 10}

// closedWithin reads from conn until the agent closes it, and fails unless
// that happens within d; it returns what the agent sent.
func closedWithin(t *testing.T, conn net.Conn, d time.Duration, what string) string {
	t.Helper()
	_ = conn.SetReadDeadline(time.Now().Add(d))
	b, err := io.ReadAll(conn)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("%s: the agent kept the connection open for %s", what, d)
	}
	return string(b)
}

// A client that stalls in its headers or its body, or idles on a kept-alive
// connection, is cut off after the limit, and no run starts.
func TestSlowClientCutOff(t *testing.T) {
	c := &countingRunners{}
	addr := serveLimited(t, c, fastLimits)
	dial := func() net.Conn {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		return conn
	}

	headers := dial()
	_, _ = io.WriteString(headers, "POST "+pathRR+" HTTP/1.1\r\nHost: agent\r\n") // and no end of headers
	closedWithin(t, headers, 3*time.Second, "stalled headers")

	body := dial()
	_, _ = io.WriteString(body, "POST "+pathRR+" HTTP/1.1\r\nHost: agent\r\nAuthorization: Bearer tok\r\nContent-Length: 200\r\n\r\n"+rrBody[:10])
	closedWithin(t, body, 3*time.Second, "stalled body")

	idle := dial()
	_, _ = io.WriteString(idle, "GET "+PathHealth+" HTTP/1.1\r\nHost: agent\r\nAuthorization: Bearer tok\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(idle), nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("health on the kept-alive connection: %v %v", resp, err)
	}
	resp.Body.Close()
	start := time.Now()
	closedWithin(t, idle, 3*time.Second, "idle kept-alive connection")
	if d := time.Since(start); d < fastLimits.idle/2 {
		t.Errorf("idle connection closed after %s, before its %s limit", d, fastLimits.idle)
	}
	if n := c.started.Load(); n != 0 {
		t.Fatalf("%d runs started by stalled requests, want 0", n)
	}
}

// The read limit bounds reading a request, not waiting for its run: a run
// that takes longer still answers on its POST.
func TestRunOutlivesReadLimit(t *testing.T) {
	c := &countingRunners{hold: 3 * fastLimits.read}
	addr := serveLimited(t, c, fastLimits)
	got := raw(t, addr, "POST", pathRR, rrBody, "tok", HeaderRequest, "long")
	if got.status != http.StatusOK || got.header.Get(HeaderChecksum) != checksum(got.body) || !strings.Contains(string(got.body), `"transactions":7`) {
		t.Fatalf("run of %s behind a %s read limit: %d %v %q, want its 200 answer", c.hold, fastLimits.read, got.status, got.header, got.body)
	}
}

// The agent's real server has every limit set (a zero would be no limit),
// the body limit with room for any options, and no write timeout (a run's
// answer is written when the run ends, bounded by its budget).
func TestDefaultLimits(t *testing.T) {
	l := defaultLimits
	if l.readHeader <= 0 || l.read < l.readHeader || l.idle <= 0 || l.body < 4<<10 {
		t.Fatalf("default limits %+v: want all set, read ≥ header, body ≥ 4 KiB", l)
	}
	srv := newControlServer(http.NotFoundHandler(), l)
	if srv.ReadHeaderTimeout != l.readHeader || srv.ReadTimeout != l.read || srv.IdleTimeout != l.idle || srv.WriteTimeout != 0 {
		t.Fatalf("control server timeouts %s %s %s %s, want %+v and no write timeout", srv.ReadHeaderTimeout, srv.ReadTimeout, srv.IdleTimeout, srv.WriteTimeout, l)
	}
	if (&handler{}).limits() != l {
		t.Fatal("a handler without limits does not use the defaults")
	}
	if cl, _ := NewClient("a", "unix:/x", ""); cl.http.Transport.(*http.Transport).IdleConnTimeout >= l.idle {
		t.Fatal("the client keeps idle connections as long as the agent: it could send on one the agent is closing")
	}
}

// Health reports the agent's goroutines, and every finished run logs them
// (bench/soak.sh reads those lines to see whether agents leak).
func TestGoroutinesReported(t *testing.T) {
	var log strings.Builder
	c := &countingRunners{}
	h := &handler{token: "tok", run: c.runners(), log: &syncWriter{w: &log}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := newControlServer(h.routes(), h.limits())
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	cl, _ := NewClient("a", "tcp:"+ln.Addr().String(), "tok")
	hl, err := cl.Health(context.Background())
	if err != nil || hl.Goroutines < 1 {
		t.Fatalf("health %+v, %v: want the goroutine count", hl, err)
	}
	if got := raw(t, ln.Addr().String(), "POST", pathRR, rrBody, "tok", HeaderRequest, "g1"); got.status != http.StatusOK {
		t.Fatalf("run: %d %s", got.status, got.body)
	}
	h.busy.Lock() // the run's goroutine has logged
	h.busy.Unlock()
	if line := log.String(); !strings.HasPrefix(line, "agent: run g1 ended (200): ") || !strings.HasSuffix(line, " goroutines\n") {
		t.Fatalf("log %q, want one line with the run's goroutine count", line)
	}
}

// syncWriter serializes writes to w.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(b)
}

// An agent or probe asked to serve its control API on TCP without a token
// refuses to start, naming the variable to set; on a unix socket it may.
func TestTCPControlNeedsToken(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	for what, serve := range map[string]func() error{
		"agent": func() error { return Serve(ctx, Config{Control: "tcp:127.0.0.1:0", Bind: "127.0.0.1"}) },
		"probe": func() error { return ServeProbe(ctx, ProbeConfig{Control: "tcp:127.0.0.1:0"}) },
	} {
		if err := serve(); err == nil || !strings.Contains(err.Error(), TokenEnv) {
			t.Errorf("%s on TCP without a token: %v, want a refusal naming %s", what, err, TokenEnv)
		}
	}
	if err := requireToken("unix:/run/x.sock", ""); err != nil {
		t.Errorf("unix socket without a token: %v, want allowed", err)
	}
}
