package agent

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cnibench/cnibench/engine"
	"github.com/cnibench/cnibench/engine/kinds"
)

// proxy stands between client and agent on loopback, as a port-forward
// does, and can cut every connection (a dropped stream) or flip a byte in
// the body of the next answers (a corrupted document).
type proxy struct {
	ln      net.Listener
	target  string
	mu      sync.Mutex
	conns   []net.Conn
	corrupt atomic.Int32 // answers left to corrupt
	cuts    atomic.Int32
}

func newProxy(t *testing.T, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, target: target}
	go p.accept()
	t.Cleanup(func() { ln.Close(); p.cut() })
	return p
}

func (p *proxy) addr() string { return p.ln.Addr().String() }

func (p *proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		u, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, u)
		p.mu.Unlock()
		go func() { _, _ = io.Copy(u, c); c.Close(); u.Close() }()
		go func() { p.down(c, u); c.Close(); u.Close() }()
	}
}

// cut closes every connection open now, in both directions.
func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
	p.cuts.Add(1)
}

// down copies agent to client; while corrupt > 0 it flips the first body
// byte of each answer (the byte after the header's blank line; answers
// are JSON or text, which never hold a blank line themselves).
func (p *proxy) down(c, u net.Conn) {
	var last [4]byte // the last 4 bytes seen, to find "\r\n\r\n" across reads
	atBody := false
	buf := make([]byte, 32<<10)
	for {
		n, err := u.Read(buf)
		for i := 0; i < n; i++ {
			if atBody {
				atBody = false
				if p.corrupt.Add(-1) >= 0 {
					buf[i] ^= 0x01
				}
			}
			copy(last[:], last[1:])
			last[3] = buf[i]
			if string(last[:]) == "\r\n\r\n" {
				atBody = true
				last = [4]byte{}
			}
		}
		if n > 0 {
			if _, werr := c.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// fakeRun stands in for an engine: it counts its runs, holds for a while
// (or until cancelled) and returns a recognisable result.
type fakeRun struct {
	hold     time.Duration
	calls    atomic.Int32
	onFirst  func() // called as the first run starts
	deadline chan time.Time
}

func (f *fakeRun) run(ctx context.Context, o engine.Options) (*engine.Result, error) {
	if f.calls.Add(1) == 1 && f.onFirst != nil {
		f.onFirst()
	}
	if f.deadline != nil {
		dl, _ := ctx.Deadline()
		f.deadline <- dl
	}
	select {
	case <-time.After(f.hold):
	case <-ctx.Done():
		return nil, fmt.Errorf("fake run: %w", ctx.Err())
	}
	return &engine.Result{Test: o.Test, Options: o, Transactions: 4242, RatePerSec: 1234.5}, nil
}

// running says whether a run is in progress (tests only).
func (rr *resultRing) running() bool {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	for _, e := range rr.runs {
		select {
		case <-e.done:
		default:
			return true
		}
	}
	return false
}

// testAgent serves a run endpoint backed by f and the result route on
// loopback, behind the token middleware. gets counts result fetches.
type testAgent struct {
	h    *handler
	addr string
	gets atomic.Int32
}

func startTestAgent(t *testing.T, f *fakeRun) *testAgent {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	a := &testAgent{h: &handler{token: "tok", ctx: ctx, run: &runners{kind: func(ctx context.Context, _ kinds.Kind, o any) (any, error) {
		return kinds.RunWith(f.run)(ctx, o)
	}}}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+PathKind+"{kind}", a.h.kindRun)
	mux.HandleFunc("GET "+PathResult+"{id}", func(w http.ResponseWriter, r *http.Request) {
		a.gets.Add(1)
		a.h.result(w, r)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: a.h.authenticate(mux)}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() {
		cancel()
		srv.Close()
		a.h.busy.Lock() // the detached run has ended
		a.h.busy.Unlock()
	})
	a.addr = ln.Addr().String()
	return a
}

// runRR runs a TCP_RR (or other engine test) through c, as the runner does.
func runRR(ctx context.Context, c *Client, o engine.Options) (*engine.Result, error) {
	return RunAs[engine.Result](ctx, c, "rr", &o)
}

var rrOptions = engine.Options{Test: engine.TCPRR, Host: "127.0.0.1", RunnerOptions: kinds.RunnerOptions{Duration: engine.Duration(time.Second)}}

// A connection cut mid-run loses the POST's answer, not the result: the
// client fetches it by request id, and the agent ran the test once.
func TestRunAnswerSurvivesCut(t *testing.T) {
	f := &fakeRun{hold: 300 * time.Millisecond}
	a := startTestAgent(t, f)
	p := newProxy(t, a.addr)
	f.onFirst = p.cut
	c, err := NewClient("a", "tcp:"+p.addr(), "tok")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := runRR(ctx, c, rrOptions)
	if err != nil {
		t.Fatalf("run with a cut connection: %v", err)
	}
	if res.Transactions != 4242 || res.Test != engine.TCPRR {
		t.Fatalf("got %+v, want the fake run's result", res)
	}
	if n := f.calls.Load(); n != 1 {
		t.Fatalf("the agent ran the test %d times, want once", n)
	}
	if p.cuts.Load() != 1 || a.gets.Load() == 0 {
		t.Fatalf("cuts %d, result fetches %d: want a cut and a re-fetch", p.cuts.Load(), a.gets.Load())
	}
}

// A corrupted answer fails its checksum and is fetched again, not re-run.
func TestCorruptAnswerRefetched(t *testing.T) {
	f := &fakeRun{hold: 50 * time.Millisecond}
	a := startTestAgent(t, f)
	p := newProxy(t, a.addr)
	p.corrupt.Store(1)
	c, _ := NewClient("a", "tcp:"+p.addr(), "tok")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := runRR(ctx, c, rrOptions)
	if err != nil {
		t.Fatalf("run with a corrupted answer: %v", err)
	}
	if res.Transactions != 4242 {
		t.Fatalf("got %+v, want the fake run's result", res)
	}
	if f.calls.Load() != 1 || a.gets.Load() != 1 || p.corrupt.Load() >= 0 {
		t.Fatalf("runs %d, re-fetches %d, corruptions left %d: want 1 run, 1 re-fetch, the corruption used", f.calls.Load(), a.gets.Load(), p.corrupt.Load())
	}
}

// Two damaged answers in a row are an error naming the agent and what
// failed, not an endless loop.
func TestCorruptAnswerTwiceFails(t *testing.T) {
	f := &fakeRun{hold: 10 * time.Millisecond}
	a := startTestAgent(t, f)
	p := newProxy(t, a.addr)
	p.corrupt.Store(1000)
	c, _ := NewClient("a", "tcp:"+p.addr(), "tok")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := runRR(ctx, c, rrOptions)
	if err == nil || !strings.Contains(err.Error(), "agent a:") || !strings.Contains(err.Error(), "failed its checksum twice") {
		t.Fatalf("error %v, want agent a's answer failing its checksum twice", err)
	}
	if f.calls.Load() != 1 {
		t.Fatalf("the agent ran the test %d times, want once", f.calls.Load())
	}
}

// No answer before the client's deadline is an error saying so; the run
// itself is bounded by the budget the client sent.
func TestRunAnswerDeadline(t *testing.T) {
	f := &fakeRun{hold: time.Minute}
	a := startTestAgent(t, f)
	c, _ := NewClient("a", "tcp:"+a.addr, "tok")
	ctx, cancel := context.WithTimeout(context.Background(), 600*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := runRR(ctx, c, rrOptions)
	if err == nil || !strings.Contains(err.Error(), "agent a: no answer to run") || !strings.Contains(err.Error(), "before the deadline") {
		t.Fatalf("error %v, want no answer before the deadline", err)
	}
	if a.gets.Load() == 0 {
		t.Fatal("the client never polled for the answer after its POST timed out")
	}
	// The budget ends the run at the agent: the agent is free again.
	for !a.h.busy.TryLock() {
		if time.Since(start) > 5*time.Second {
			t.Fatal("the run outlived the client's budget by seconds")
		}
		time.Sleep(10 * time.Millisecond)
	}
	a.h.busy.Unlock()
}

type rawAnswer struct {
	status int
	header http.Header
	body   []byte
}

// raw sends one request by hand: method, path, token, then header pairs.
func raw(t *testing.T, addr, method, path, body, token string, hdr ...string) rawAnswer {
	t.Helper()
	a, err := rawDo(addr, method, path, body, token, hdr...)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func rawDo(addr, method, path, body, token string, hdr ...string) (rawAnswer, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, "http://"+addr+path, rd)
	if err != nil {
		return rawAnswer{}, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return rawAnswer{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return rawAnswer{resp.StatusCode, resp.Header, b}, err
}

const rrBody = `{"test":"TCP_RR","host":"127.0.0.1","duration":"1s"}`

// The result route: 202 while running, the same document and checksum once
// done, 404 for an unknown id, 401 without the token; a repeated request id
// never starts a second run.
func TestResultRoute(t *testing.T) {
	started := make(chan struct{})
	f := &fakeRun{hold: 300 * time.Millisecond, onFirst: func() { close(started) }}
	a := startTestAgent(t, f)
	post := make(chan rawAnswer, 1)
	go func() {
		ans, err := rawDo(a.addr, "POST", pathRR, rrBody, "tok", HeaderRequest, "run-1")
		if err != nil {
			ans.body = []byte(err.Error())
		}
		post <- ans
	}()
	<-started

	if got := raw(t, a.addr, "GET", PathResult+"run-1", "", "tok"); got.status != http.StatusAccepted {
		t.Fatalf("while running: %d %s, want 202", got.status, got.body)
	}
	if got := raw(t, a.addr, "POST", pathRR, rrBody, "tok", HeaderRequest, "run-1"); got.status != http.StatusAccepted {
		t.Fatalf("second POST of run-1 while running: %d %s, want 202", got.status, got.body)
	}
	if got := raw(t, a.addr, "GET", PathResult+"nope", "", "tok"); got.status != http.StatusNotFound {
		t.Fatalf("unknown id: %d %s, want 404", got.status, got.body)
	}
	if got := raw(t, a.addr, "GET", PathResult+"run-1", "", "wrong"); got.status != http.StatusUnauthorized {
		t.Fatalf("wrong token: %d %s, want 401", got.status, got.body)
	}
	if got := raw(t, a.addr, "GET", PathResult+"bad.id", "", "tok"); got.status != http.StatusBadRequest {
		t.Fatalf("bad id: %d %s, want 400", got.status, got.body)
	}
	if got := raw(t, a.addr, "POST", pathRR, rrBody, "tok", HeaderRequest, "run-2"); got.status != http.StatusConflict {
		t.Fatalf("another run while busy: %d %s, want 409", got.status, got.body)
	}

	first := <-post
	if first.status != http.StatusOK || first.header.Get(HeaderRequest) != "run-1" || first.header.Get(HeaderChecksum) != checksum(first.body) {
		t.Fatalf("POST answer: %d %v %s, want 200 for run-1 with its checksum", first.status, first.header, first.body)
	}
	for _, again := range []rawAnswer{
		raw(t, a.addr, "GET", PathResult+"run-1", "", "tok"),
		raw(t, a.addr, "POST", pathRR, rrBody, "tok", HeaderRequest, "run-1"),
	} {
		if again.status != http.StatusOK || !bytes.Equal(again.body, first.body) || again.header.Get(HeaderChecksum) != first.header.Get(HeaderChecksum) {
			t.Fatalf("answer again: %d %s, want the POST's 200 %s", again.status, again.body, first.body)
		}
	}
	if n := f.calls.Load(); n != 1 {
		t.Fatalf("the agent ran %d tests, want 1", n)
	}
}

// The agent keeps the last 16 answers: the 17th run pushes out the first.
func TestResultRingKeeps16(t *testing.T) {
	f := &fakeRun{}
	a := startTestAgent(t, f)
	const keep = 16 // the protocol's promise, not keptAnswers: a changed constant must fail here
	for i := range keep + 1 {
		if got := raw(t, a.addr, "POST", pathRR, rrBody, "tok", HeaderRequest, fmt.Sprintf("r%d", i)); got.status != http.StatusOK {
			t.Fatalf("run r%d: %d %s", i, got.status, got.body)
		}
	}
	if got := raw(t, a.addr, "GET", PathResult+"r0", "", "tok"); got.status != http.StatusNotFound {
		t.Fatalf("r0 after %d newer runs: %d, want 404", keep, got.status)
	}
	for i := 1; i <= keep; i++ {
		if got := raw(t, a.addr, "GET", PathResult+fmt.Sprintf("r%d", i), "", "tok"); got.status != http.StatusOK {
			t.Fatalf("r%d: %d %s, want 200", i, got.status, got.body)
		}
	}
}

// The run's deadline comes from the budget header (default an hour); a
// bad budget is refused before anything runs.
func TestRunBudget(t *testing.T) {
	f := &fakeRun{deadline: make(chan time.Time, 1)}
	a := startTestAgent(t, f)
	for _, tc := range []struct {
		budget string
		want   time.Duration
	}{{"5s", 5 * time.Second}, {"", defaultRunBudget}} {
		start := time.Now()
		hdr := []string{HeaderRequest, "b" + tc.budget}
		if tc.budget != "" {
			hdr = append(hdr, HeaderBudget, tc.budget)
		}
		if got := raw(t, a.addr, "POST", pathRR, rrBody, "tok", hdr...); got.status != http.StatusOK {
			t.Fatalf("budget %q: %d %s", tc.budget, got.status, got.body)
		}
		if left := (<-f.deadline).Sub(start); left < tc.want || left > tc.want+time.Second {
			t.Fatalf("budget %q: the run had %s, want about %s", tc.budget, left, tc.want)
		}
	}
	if got := raw(t, a.addr, "POST", pathRR, rrBody, "tok", HeaderBudget, "-1s"); got.status != http.StatusBadRequest || !strings.Contains(string(got.body), HeaderBudget) {
		t.Fatalf("bad budget: %d %s, want 400 naming %s", got.status, got.body, HeaderBudget)
	}
	// The client sends what is left of its context.
	c, _ := NewClient("a", "tcp:"+a.addr, "tok")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	start := time.Now()
	if _, err := runRR(ctx, c, rrOptions); err != nil {
		t.Fatal(err)
	}
	if left := (<-f.deadline).Sub(start); left < 2500*time.Millisecond || left > 4*time.Second {
		t.Fatalf("client budget: the run had %s, want about 3s", left)
	}
	if n := f.calls.Load(); n != 3 {
		t.Fatalf("%d runs, want 3 (the bad budget must not run)", n)
	}
}

// End to end with the real engine behind the agent's own routes: a TCP_RR
// run whose connection is cut mid-run still returns its measurement.
func TestRealRunSurvivesCut(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	srv := &engine.Server{Bind: "127.0.0.1", Ports: map[engine.Test]int{
		engine.TCPStream: -1, engine.UDPStream: -1, engine.TCPRR: 0, engine.UDPRR: -1, engine.TCPCRR: -1}}
	if err := srv.Listen(); err != nil {
		t.Fatal(err)
	}
	sctx, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(sctx) }()
	defer func() { stop(); <-served }()

	h := &handler{token: "tok", ctx: sctx}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: h.routes()}
	go func() { _ = hs.Serve(ln) }()
	defer hs.Close()
	p := newProxy(t, ln.Addr().String())

	wrong, _ := NewClient("a", "tcp:"+p.addr(), "wrong")
	if _, err := wrong.Health(ctx); err == nil || !strings.Contains(err.Error(), "bad or missing agent token") {
		t.Fatalf("wrong token: %v, want refused", err)
	}
	if got := raw(t, ln.Addr().String(), "GET", PathResult+"x", "", "wrong"); got.status != http.StatusUnauthorized {
		t.Fatalf("result route with a wrong token: %d, want 401", got.status)
	}

	cutMidRun := make(chan bool, 1)
	go func() {
		for !h.results.running() {
			if ctx.Err() != nil {
				cutMidRun <- false
				return
			}
			time.Sleep(time.Millisecond)
		}
		p.cut()
		cutMidRun <- h.results.running()
	}()
	c, _ := NewClient("a", "tcp:"+p.addr(), "tok")
	o := engine.Options{Test: engine.TCPRR, Host: "127.0.0.1", Port: srv.Port(engine.TCPRR), RunnerOptions: kinds.RunnerOptions{Duration: engine.Duration(300 * time.Millisecond)}}
	res, err := runRR(ctx, c, o)
	if err != nil {
		t.Fatalf("TCP_RR with a cut connection: %v", err)
	}
	if !<-cutMidRun {
		t.Fatal("the cut did not happen while the test ran")
	}
	if res.Test != engine.TCPRR || res.Transactions == 0 || res.Latency == nil {
		t.Fatalf("got %+v, want a TCP_RR measurement", res)
	}
	h.results.mu.Lock()
	n := len(h.results.runs)
	h.results.mu.Unlock()
	if n != 1 {
		t.Fatalf("the agent holds %d runs, want 1 (the test ran once)", n)
	}
}

// An agent that cannot be reached never got the request: that fails at
// once, not after polling until the deadline.
func TestRunUnreachableFailsFast(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	c, _ := NewClient("a", "tcp:"+addr, "tok")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	_, err = runRR(ctx, c, rrOptions)
	if err == nil || !strings.Contains(err.Error(), "agent a:") || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("error %v, want agent a's connection refused", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("took %s to report an unreachable agent", d)
	}
}
