// Package agent is the side of cnibench that runs where the traffic is: in a
// lab namespace today, in a pod on a real cluster later. An agent serves every
// engine's data ports and a small control API (HTTP + JSON) through which the
// CLI asks it to run the client side of a test. The same binary is CLI and
// agent, as with fortio.
package agent

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/cnibench/cnibench/engine"
	"github.com/cnibench/cnibench/engine/dnsload"
	"github.com/cnibench/cnibench/engine/httpload"
	"github.com/cnibench/cnibench/engine/kinds"
	"github.com/cnibench/cnibench/internal/version"
)

// API paths and headers of the control protocol.
const (
	PathHealth = "/v1/health"
	// PathKind + a kind's name runs a test of that registered kind
	// (kinds.Kind.Run): every kind, built-in or not, has this one route.
	PathKind = "/v1/kind/"
	// PathNodeServices is served by node-probe agents only: what the
	// node's Service datapath holds (nodeprobe.Report).
	PathNodeServices = "/v1/node/services"
	HeaderChecksum   = "X-Cnibench-Sha256"
	TokenEnv         = "CNIBENCH_AGENT_TOKEN" // the token travels in the environment, not argv
)

// Config says where the agent listens.
type Config struct {
	// Control is "unix:/path/to.sock" or "tcp:host:port".
	Control string
	// Token authenticates the CLI (Authorization: Bearer ...). Empty disables
	// authentication; only sensible for a unix socket in a root-only dir.
	Token string
	// Bind is the address the engine servers listen on ("" = all).
	Bind string
	// HTTPPort is the HTTP echo server's port; 0: httpload.DefaultPort.
	HTTPPort int
	// HTTPResponseSize is the HTTP server's body size (0: 512 bytes) and
	// HTTPWork the artificial CPU work per request (0: none).
	HTTPResponseSize int
	HTTPWork         time.Duration
	// DNS, when its Listen address is set, runs a DNS server (dnsmasq) for
	// the DNS tests beside the engines, stopped with the agent.
	DNS dnsload.ServerSpec
}

// Health is the answer of PathHealth.
type Health struct {
	OK      bool   `json:"ok"`
	Version string `json:"version"`
	PID     int    `json:"pid"`
	// Goroutines is runtime.NumGoroutine(): with nothing running it
	// stays flat across runs, or the agent leaks.
	Goroutines int `json:"goroutines,omitempty"`
}

// Serve runs the engine servers and the control API until ctx is done.
func Serve(ctx context.Context, cfg Config) error {
	if err := requireToken(cfg.Control, cfg.Token); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	srv := &engine.Server{Bind: cfg.Bind}
	if err := srv.Listen(); err != nil {
		return err
	}
	hsrv := &httpload.Server{Bind: cfg.Bind, Port: cfg.HTTPPort, ResponseSize: cfg.HTTPResponseSize, Work: cfg.HTTPWork}
	if err := hsrv.Listen(); err != nil {
		cancel()
		_ = srv.Serve(ctx) // ctx is done: closes the engine sockets and returns
		return err
	}
	if cfg.DNS.Listen != "" {
		// Without a DNS server only the DNS tests fail (and say so); the
		// agent's other engines still serve.
		if stop, err := startDNS(ctx, cfg.DNS); err != nil {
			fmt.Fprintf(os.Stderr, "agent: no DNS server, DNS tests against this agent will fail: %v\n", err)
		} else {
			defer stop()
		}
	}
	kindServes, err := listenKinds(cfg.Bind)
	if err != nil {
		cancel()
		_ = srv.Serve(ctx)
		_ = hsrv.Serve(ctx)
		return err
	}
	serveErr := make(chan error, 3+len(kindServes))
	// Serve returns only once the engines have closed their sockets, so an
	// agent started right after this one (tests, a restarted pod) finds its
	// fixed ports free.
	var engines sync.WaitGroup
	defer engines.Wait()
	defer cancel()
	engines.Add(2)
	go func() { defer engines.Done(); serveErr <- srv.Serve(ctx) }()
	go func() { defer engines.Done(); serveErr <- hsrv.Serve(ctx) }()
	for _, serve := range kindServes {
		engines.Add(1)
		go func() { defer engines.Done(); serveErr <- serve(ctx) }()
	}

	ln, err := listenControl(cfg.Control)
	if err != nil {
		return err
	}
	h := &handler{token: cfg.Token, ctx: ctx, log: os.Stderr}
	return serveControl(ctx, cancel, ln, h.routes(), serveErr)
}

// listenKinds starts the server side of the registered kinds that have
// one (kinds.Kind.Listen); on an error it closes those already listening.
func listenKinds(bind string) ([]func(context.Context) error, error) {
	var serves []func(context.Context) error
	for _, k := range kinds.All() {
		if k.Listen == nil {
			continue
		}
		serve, err := k.Listen(bind)
		if err != nil {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			for _, s := range serves {
				_ = s(ctx)
			}
			return nil, fmt.Errorf("%s server: %w", k.Name, err)
		}
		serves = append(serves, serve)
	}
	return serves, nil
}

// serveControl serves the control API on ln until ctx is done or a server
// fails (this one, or another whose error comes in on serveErr), then
// cancels what ctx bounds (engines, runs in progress) and shuts the API
// down.
func serveControl(ctx context.Context, cancel context.CancelFunc, ln net.Listener, h http.Handler, serveErr chan error) error {
	hs := newControlServer(h, defaultLimits)
	go func() {
		if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			serveErr <- fmt.Errorf("control API: %w", err)
		}
	}()
	var err error
	select {
	case <-ctx.Done():
	case err = <-serveErr:
	}
	cancel()
	shutdownCtx, done := context.WithTimeout(context.Background(), 2*time.Second)
	defer done()
	_ = hs.Shutdown(shutdownCtx)
	return err
}

// requireToken refuses a control API on TCP without a token: anyone who
// reaches the port could run tests from the agent. A unix socket is
// protected by its 0600 mode instead.
func requireToken(control, token string) error {
	if strings.HasPrefix(control, "tcp:") && token == "" {
		return fmt.Errorf("--control %s: a TCP control API needs a token in %s (without one anyone who reaches the port could start tests)", control, TokenEnv)
	}
	return nil
}

func listenControl(control string) (net.Listener, error) {
	network, addr, ok := strings.Cut(control, ":")
	if !ok || (network != "unix" && network != "tcp") || addr == "" {
		return nil, fmt.Errorf("--control %q: want unix:/path or tcp:host:port", control)
	}
	if network == "unix" {
		_ = os.Remove(addr) // a stale socket from a killed agent
	}
	ln, err := net.Listen(network, addr)
	if err != nil {
		return nil, fmt.Errorf("control API: %w", err)
	}
	if network == "unix" {
		_ = os.Chmod(addr, 0o600)
	}
	return ln, nil
}

type handler struct {
	token string
	busy  sync.Mutex // one client run at a time: runs must not disturb each other
	// ctx ends runs when the agent stops (nil: never); results keeps
	// answers by request id for re-fetch (results.go).
	ctx     context.Context
	results resultRing
	// run starts the client sides (nil: the real engines, realRunners);
	// lim bounds requests (zero: defaultLimits). Both are set by tests.
	run *runners
	lim limits
	log io.Writer // a line per finished run (nil: none)
}

func (h *handler) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+PathHealth, h.health)
	mux.HandleFunc("GET "+PathSysctls, h.sysctls)
	mux.HandleFunc("GET "+PathNodeStat, h.nodeStat)
	mux.HandleFunc("POST "+PathKind+"{kind}", h.kindRun)
	mux.HandleFunc("GET "+PathResult+"{id}", h.result)
	return h.authenticate(mux)
}

// authenticate refuses a request without "Authorization: Bearer <token>"
// before any route sees it: 401, with the scheme the agent wants
// (RFC 6750), and nothing read or started.
func (h *handler) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h.token != "" {
			got, scheme := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			if !scheme || subtle.ConstantTimeCompare([]byte(got), []byte(h.token)) != 1 {
				w.Header().Set("WWW-Authenticate", `Bearer realm="cnibench agent"`)
				http.Error(w, "bad or missing agent token", http.StatusUnauthorized)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

func (h *handler) health(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, Health{OK: true, Version: version.Get().Version, PID: os.Getpid(), Goroutines: runtime.NumGoroutine()})
}

// options are what a run endpoint decodes: a JSON Options struct that
// fills its defaults and names its first bad field.
type options interface{ Validate() error }

// kindRun is the run endpoint (PathKind + name) of every registered kind:
// decode the kind's options strictly, validate, take the agent (one run
// at a time: runs must not disturb each other), run the client side and
// answer with the checksummed result. The run is kept by request id and
// outlives its connection (results.go); a repeated request id gets that
// run's answer, or 202 while it runs, never a new run.
func (h *handler) kindRun(w http.ResponseWriter, r *http.Request) {
	k, ok := kinds.Lookup(r.PathValue("kind"))
	if !ok || k.Run == nil {
		http.Error(w, fmt.Sprintf("no kind %q runs through this agent (cnibench %s)", r.PathValue("kind"), version.Get().Version), http.StatusNotFound)
		return
	}
	run := h.runners().kind
	h.serveRun(w, r, func(dec *json.Decoder) (func(context.Context) (any, error), error) {
		o := k.NewOptions()
		if err := dec.Decode(o); err != nil {
			return nil, fmt.Errorf("bad %s options: %w", k.Name, err)
		}
		if v, ok := o.(options); ok {
			if err := v.Validate(); err != nil {
				return nil, err
			}
		}
		return func(ctx context.Context) (any, error) { return run(ctx, k, o) }, nil
	})
}

// serveRun is a run endpoint once it knows its options: decode reads them
// strictly and returns the run, or the bad request's error.
func (h *handler) serveRun(w http.ResponseWriter, r *http.Request, decode func(*json.Decoder) (func(context.Context) (any, error), error)) {
	id, budget, err := runRequest(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if e := h.results.get(id); e != nil {
		e.reply(w, id)
		return
	}
	run, err := h.readOptions(w, r, decode)
	if err != nil {
		status := http.StatusBadRequest
		if tooBig := (*http.MaxBytesError)(nil); errors.As(err, &tooBig) {
			status = http.StatusRequestEntityTooLarge
		}
		http.Error(w, oneLine(err.Error()), status)
		return
	}
	if !h.busy.TryLock() {
		http.Error(w, "agent is already running a test", http.StatusConflict)
		return
	}
	e, fresh := h.results.start(id)
	if !fresh { // the same id raced in since the check above
		h.busy.Unlock()
		e.reply(w, id)
		return
	}
	launch(h, id, e, budget, func(ctx context.Context, _ struct{}) (*any, error) {
		v, err := run(ctx)
		return &v, err
	}, struct{}{})
	select {
	case <-e.done:
		e.ans.write(w, id)
	case <-r.Context().Done(): // connection gone: the run goes on, its answer waits in h.results
	}
}

// writeJSON sends v with a SHA-256 of the body, so the client can tell a
// truncated or corrupted document from a real one.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	sum := sha256.Sum256(b)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set(HeaderChecksum, hex.EncodeToString(sum[:]))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
