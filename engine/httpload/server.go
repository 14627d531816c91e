package httpload

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"
)

// Server answers every request (any method, any path) with status 200 and a
// fixed body of ResponseSize bytes, after reading and discarding the
// request body. It keeps connections alive unless the client sends
// "Connection: close" (or speaks HTTP/1.0 without keep-alive), answers
// pipelined requests in one write, and honours "Expect: 100-continue".
//
// It is a minimal HTTP/1.1 server built like nginx: one epoll event loop
// per CPU the process may use, accepting from the shared listening socket
// (EPOLLEXCLUSIVE), non-blocking edge-triggered connections, responses
// precomputed. A first version with a goroutine per net.Conn cost 14.5 us
// of CPU per keep-alive request under wrk (a read() returning EAGAIN and a
// goroutine park per request) against nginx's 13.5; the event loops cost
// 11. bench/http.sh measures it against nginx.
type Server struct {
	Bind         string `json:"bind,omitempty"`          // address to listen on; "" = all
	Port         int    `json:"port,omitempty"`          // 0: DefaultPort (8080); -1: any free port (see Addr)
	ResponseSize int    `json:"response_size,omitempty"` // body bytes; 0: DefaultResponseSize (512); -1: empty body
	// Work is artificial CPU work per request (a busy loop), to model an
	// application that costs CPU. 0: none.
	Work time.Duration `json:"work,omitempty"`
	// Delay is an artificial wait per request that uses no CPU (a sleep),
	// to model a slow backend. 0: none.
	Delay time.Duration `json:"delay,omitempty"`

	mu      sync.Mutex
	once    sync.Once
	ready   chan struct{}
	ln      *net.TCPListener
	lfd     int    // ln's descriptor (non-blocking), accepted from directly
	serving bool   // Serve was called
	respKA  []byte // HTTP/1.1 keep-alive response
	respKA0 []byte // HTTP/1.0 keep-alive response ("Connection: keep-alive")
	respCl  []byte // response that closes ("Connection: close")
}

func (s *Server) init() {
	s.once.Do(func() { s.ready = make(chan struct{}) })
}

// Ready is closed once the server is listening.
func (s *Server) Ready() <-chan struct{} {
	s.init()
	return s.ready
}

// Addr is the listening address, nil before Listen.
func (s *Server) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil {
		return nil
	}
	return s.ln.Addr()
}

// Listen validates the configuration and binds the listening socket.
func (s *Server) Listen() error {
	s.init()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln != nil {
		return fmt.Errorf("httpload server: already listening on %s", s.ln.Addr())
	}
	port := s.Port
	switch {
	case port == 0:
		port = DefaultPort
	case port == -1:
		port = 0
	case port < 0 || port > 65535:
		return fmt.Errorf("httpload server: port %d out of range 1..65535", s.Port)
	}
	size := s.ResponseSize
	switch {
	case size == 0:
		size = DefaultResponseSize
	case size == -1:
		size = 0
	case size < 0 || size > maxBodySize:
		return fmt.Errorf("httpload server: response size must be in 0..%d, got %d", maxBodySize, s.ResponseSize)
	}
	if s.Work < 0 || s.Delay < 0 {
		return fmt.Errorf("httpload server: work and delay must not be negative")
	}
	s.respKA = buildResponse("HTTP/1.1", "", size)
	s.respKA0 = buildResponse("HTTP/1.1", "keep-alive", size)
	s.respCl = buildResponse("HTTP/1.1", "close", size)

	// No TCP keep-alive probes: each would cost four setsockopt calls per
	// accepted connection.
	lc := net.ListenConfig{KeepAlive: -1}
	addr := net.JoinHostPort(s.Bind, strconv.Itoa(port))
	ln, err := lc.Listen(context.Background(), "tcp", addr)
	if err != nil {
		return fmt.Errorf("httpload server: listen on %s: %w", addr, rootErr(err))
	}
	tl := ln.(*net.TCPListener)
	rc, err := tl.SyscallConn()
	if err == nil {
		err = rc.Control(func(fd uintptr) { s.lfd = int(fd) })
	}
	if err != nil {
		ln.Close()
		return fmt.Errorf("httpload server: listen on %s: %w", addr, err)
	}
	s.ln = tl
	close(s.ready)
	return nil
}

func buildResponse(proto, conn string, size int) []byte {
	var b bytes.Buffer
	b.WriteString(proto + " 200 OK\r\nServer: cnibench\r\nContent-Type: application/octet-stream\r\n")
	if conn != "" {
		b.WriteString("Connection: " + conn + "\r\n")
	}
	b.WriteString("Content-Length: " + strconv.Itoa(size) + "\r\n\r\n")
	body := bytes.Repeat([]byte("x"), size)
	b.Write(body)
	return b.Bytes()
}

var (
	resp100 = []byte("HTTP/1.1 100 Continue\r\n\r\n")
	resp400 = []byte("HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Length: 0\r\n\r\n")
	resp411 = []byte("HTTP/1.1 411 Length Required\r\nConnection: close\r\nContent-Length: 0\r\n\r\n")
)

// spin burns CPU for d (Server.Work).
func spin(d time.Duration) {
	end := time.Now().Add(d)
	x := uint64(1)
	for time.Now().Before(end) {
		for range 64 {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	spinSink = x
}

var spinSink uint64
