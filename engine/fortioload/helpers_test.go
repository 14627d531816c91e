package fortioload

import (
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cnibench/cnibench/engine/httpload"
	"github.com/cnibench/cnibench/engine/internal/servetest"
	"github.com/cnibench/cnibench/engine/kinds"
)

// startServer runs the agent's HTTP server (the HTTP kind's) on a free
// port of 127.0.0.1 until the test ends and returns its address.
func startServer(t *testing.T) string {
	t.Helper()
	s := &httpload.Server{Bind: "127.0.0.1", Port: -1}
	if err := s.Listen(); err != nil {
		t.Fatal(err)
	}
	servetest.Serve(t, s.Serve)
	<-s.Ready()
	return s.Addr().String()
}

// countingProxy relays every connection it accepts to a backend and
// counts them: the connections fortio opened, counted apart from
// fortio's own count.
type countingProxy struct {
	ln       net.Listener
	accepted atomic.Int64
	wg       sync.WaitGroup
}

func startCountingProxy(t *testing.T, backend string) *countingProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &countingProxy{ln: ln}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.accepted.Add(1)
			p.wg.Add(1)
			go func() { defer p.wg.Done(); relay(c, backend) }()
		}
	}()
	t.Cleanup(func() { ln.Close(); p.wg.Wait() })
	return p
}

// relay copies both ways until either side is done, then closes both.
func relay(c net.Conn, backend string) {
	defer c.Close()
	b, err := net.Dial("tcp", backend)
	if err != nil {
		return
	}
	defer b.Close()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(b, c); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, b); done <- struct{}{} }()
	<-done
}

// optionsFor aims o at addr ("host:port") for d measured.
func optionsFor(t *testing.T, addr string, o Options, d time.Duration) Options {
	t.Helper()
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	o.Host = host
	if o.Port, err = strconv.Atoi(port); err != nil {
		t.Fatal(err)
	}
	o.RunnerOptions = kinds.RunnerOptions{Duration: kinds.Duration(d)}
	return o
}
