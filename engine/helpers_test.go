package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/engine/kinds"
)

// startServer runs a Server on 127.0.0.1 with every test on a free port and
// stops it (checking that Serve returns promptly and cleanly) at cleanup.
func startServer(t *testing.T, dropEvery uint64) *Server {
	t.Helper()
	s := freePortServer("127.0.0.1")
	s.dropEvery = dropEvery
	stop := serve(t, s)
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Error(err)
		}
	})
	return s
}

// freePortServer is a Server on bind with every test on a free port.
func freePortServer(bind string) *Server {
	s := &Server{Bind: bind, Ports: map[Test]int{}}
	for _, tt := range Tests {
		s.Ports[tt] = 0
	}
	return s
}

// serve runs s.Serve until the returned stop, which cancels it and returns
// what Serve returned, or an error if it did not return within 3 s.
func serve(t *testing.T, s *Server) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx) }()
	select {
	case <-s.Ready():
	case err := <-done:
		cancel()
		t.Fatalf("Serve: %v", err)
	}
	return func() error {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				return fmt.Errorf("Serve returned %v after cancel", err)
			}
			return nil
		case <-time.After(3 * time.Second):
			return errors.New("Serve did not return within 3s of cancel")
		}
	}
}

// opts builds loopback options for test tt against s.
func opts(s *Server, tt Test, d time.Duration) Options {
	return Options{Test: tt, Host: "127.0.0.1", Port: s.Port(tt), RunnerOptions: kinds.RunnerOptions{Duration: Duration(d)}}
}

func run(t *testing.T, o Options) *Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r, err := Run(ctx, o)
	if err != nil {
		t.Logf("sockets of port %d (/proc/net/tcp*, st 0A = LISTEN, 01 = ESTABLISHED):\n%s", o.Port, portSockets(o.Port))
		t.Logf("engine goroutines at the failure:\n%s", engineStacks())
		t.Fatalf("Run(%s): %v", o.Test, err)
	}
	if r.Test != o.Test || r.Seconds <= 0 {
		t.Fatalf("Run(%s): bad result header: test %s seconds %g", o.Test, r.Test, r.Seconds)
	}
	return r
}

// openFDs counts this process's open file descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatalf("read /proc/self/fd: %v", err)
	}
	return len(ents)
}

// portSockets lists the kernel's TCP sockets with port as either end: after
// a failed run they show whether a connection sat in the accept queue, was
// accepted and left unanswered, or never got through.
func portSockets(port int) string {
	hex := fmt.Sprintf(":%04X ", port)
	var out strings.Builder
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for i, line := range strings.Split(string(b), "\n") {
			if i == 0 || strings.Contains(line, hex) {
				out.WriteString(line + "\n")
			}
		}
	}
	return out.String()
}

// engineStacks is the stacks of the goroutines running engine code (server
// workers, flows), to tell which one a hung run waited on.
func engineStacks() string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var out strings.Builder
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "cnibench/engine.") && !strings.Contains(g, "engineStacks") {
			out.WriteString(g + "\n\n")
		}
	}
	return out.String()
}
