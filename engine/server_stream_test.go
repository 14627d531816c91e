package engine

import (
	"encoding/binary"
	"io"
	"net"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// streamConn opens a TCP_STREAM connection of session to s and sends its
// hello (no warmup: every byte counts).
func streamConn(t *testing.T, s *Server, session uint64, stream uint32) *net.TCPConn {
	t.Helper()
	c, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Port(TCPStream))))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	var hello [hdrLen]byte
	h := tcpHello{test: TCPStream, session: session, msgSize: 1 << 16, stream: stream}
	h.put(hello[:])
	if _, err := c.Write(hello[:]); err != nil {
		t.Fatal(err)
	}
	return c.(*net.TCPConn)
}

func sendBytes(t *testing.T, c net.Conn, n int) {
	t.Helper()
	if _, err := c.Write(make([]byte, n)); err != nil {
		t.Fatal(err)
	}
}

// endStreamCount shuts the write side and returns the server's count.
func endStreamCount(t *testing.T, c *net.TCPConn) int64 {
	t.Helper()
	if err := c.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	var trailer [trailLen]byte
	if _, err := io.ReadFull(c, trailer[:]); err != nil {
		t.Fatalf("no trailer: %v", err)
	}
	return int64(binary.BigEndian.Uint64(trailer[:]))
}

func loopCount(s *Server) int {
	s.streams.mu.Lock()
	defer s.streams.mu.Unlock()
	return len(s.streams.m)
}

func waitLoops(t *testing.T, s *Server, want int) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for loopCount(s) != want {
		if time.Now().After(deadline) {
			t.Fatalf("%d session loops, want %d", loopCount(s), want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Each session's streams are read by one loop that ends with the session's
// last stream: two sessions at once, one of them with a stream joining
// while its first is being read, get exact counts each, and no loop stays.
func TestStreamLoopPerSession(t *testing.T) {
	s := startServer(t, 0)
	a1, b1 := streamConn(t, s, 1, 0), streamConn(t, s, 2, 0)
	sendBytes(t, a1, 1<<20)
	sendBytes(t, b1, 3<<20)
	waitLoops(t, s, 2)
	a2 := streamConn(t, s, 1, 1)
	sendBytes(t, a2, 5<<20)
	if got := endStreamCount(t, a1); got != 1<<20 {
		t.Errorf("session 1 stream 0: server counted %d bytes, want %d", got, 1<<20)
	}
	if n := loopCount(s); n != 2 {
		t.Errorf("%d loops with a stream of each session open, want 2", n)
	}
	if got := endStreamCount(t, a2); got != 5<<20 {
		t.Errorf("session 1 stream 1: server counted %d bytes, want %d", got, 5<<20)
	}
	if got := endStreamCount(t, b1); got != 3<<20 {
		t.Errorf("session 2: server counted %d bytes, want %d", got, 3<<20)
	}
	waitLoops(t, s, 0)
	// The session's id again starts a new loop.
	a3 := streamConn(t, s, 1, 0)
	sendBytes(t, a3, 1000)
	if got := endStreamCount(t, a3); got != 1000 {
		t.Errorf("session 1 again: server counted %d bytes, want 1000", got)
	}
	waitLoops(t, s, 0)
}

// A server stopped while a stream is open still returns promptly: the
// stream is shut down, its loop sees the end and exits.
func TestStreamLoopEndsWithServer(t *testing.T) {
	s := freePortServer("127.0.0.1")
	stop := serve(t, s)
	c := streamConn(t, s, 7, 0)
	sendBytes(t, c, 1<<20)
	waitLoops(t, s, 1)
	if err := stop(); err != nil {
		t.Fatalf("with a stream open: %v", err)
	}
	if n := loopCount(s); n != 0 {
		t.Errorf("%d session loops left after Serve returned", n)
	}
}

// A session whose streams send nothing gives its P back: its loop waits in
// a system call the scheduler knows of (the raw waits between reads hold
// the P, and a server's other work would queue behind an idle client).
func TestStreamLoopIdleGivesPBack(t *testing.T) {
	s := startServer(t, 0)
	streamConn(t, s, 9, 0)
	waitLoops(t, s, 1)
	deadline := time.Now().Add(3 * time.Second)
	for {
		state := loopState()
		if strings.HasPrefix(state, "syscall") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("an idle session's loop is %q, want in a syscall the scheduler knows of", state)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// loopState is the scheduler's state of the stream loop's goroutine, as
// runtime.Stack shows it ("syscall", "running", ...).
func loopState() string {
	buf := make([]byte, 1<<20)
	for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
		if !strings.Contains(g, "runStreamLoop") {
			continue
		}
		head, _, _ := strings.Cut(g, "\n")
		if i, j := strings.Index(head, "["), strings.Index(head, "]"); i >= 0 && j > i {
			return head[i+1 : j]
		}
	}
	// A goroutine running on another thread shows no stack.
	return "not shown: running on another thread"
}
