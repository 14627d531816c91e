package engine

import (
	"context"
	"errors"
	"github.com/cnibench/cnibench/engine/kinds"
	"net"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Cancelling ctx mid-interval (or mid-warmup) returns at once with the
// context's error.
func TestCancel(t *testing.T) {
	s := startServer(t, 0)
	for _, tt := range Tests {
		for _, warm := range []time.Duration{0, 10 * time.Second} {
			o := opts(s, tt, 10*time.Second)
			o.Warmup = Duration(warm)
			o.Streams = 2
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(200*time.Millisecond, cancel)
			start := time.Now()
			r, err := Run(ctx, o)
			d := time.Since(start)
			cancel()
			if !errors.Is(err, context.Canceled) || r != nil {
				t.Errorf("%s warmup %s: got %v, %v; want context.Canceled", tt, warm, r, err)
			}
			if d > 700*time.Millisecond {
				t.Errorf("%s warmup %s: returned %s after start, cancel was at 200ms", tt, warm, d)
			}
		}
	}
}

// A port nobody listens on must fail fast with one line naming the test and
// the address.
func TestRefused(t *testing.T) {
	tcpPort := func() int {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		return l.Addr().(*net.TCPAddr).Port
	}
	udpPort := func() int {
		fd, port := udpSocket(t)
		_ = unix.Close(fd)
		return port
	}
	for _, tt := range Tests {
		port := tcpPort()
		if tt == UDPStream || tt == UDPRR {
			port = udpPort()
		}
		o := Options{Test: tt, Host: "127.0.0.1", Port: port, RunnerOptions: kinds.RunnerOptions{Duration: Duration(5 * time.Second)}}
		start := time.Now()
		_, err := Run(context.Background(), o)
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("%s: took %s to fail", tt, d)
		}
		if err == nil {
			t.Errorf("%s: no error", tt)
			continue
		}
		msg := err.Error()
		t.Logf("%s: %s", tt, msg)
		addr := "127.0.0.1:" + strconv.Itoa(port)
		if !strings.HasPrefix(msg, string(tt)) || !strings.Contains(msg, addr) ||
			!strings.Contains(msg, "refused") || strings.Contains(msg, "\n") {
			t.Errorf("%s: error %q should be one line naming the test, %s and the refusal", tt, msg, addr)
		}
	}
}

func TestValidate(t *testing.T) {
	good := Options{Test: TCPRR, Host: "h", RunnerOptions: kinds.RunnerOptions{Duration: Duration(time.Second)}}
	o := good
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	if o.Port != DefaultPort[TCPRR] || o.Streams != 1 || o.MessageSize != 1 || o.Mode != Blocking {
		t.Errorf("defaults not filled: %+v", o)
	}
	bad := []struct {
		mod  func(*Options)
		want string
	}{
		{func(o *Options) { o.Test = "TCP_FOO" }, `unknown test "TCP_FOO"`},
		{func(o *Options) { o.Host = "" }, "no server host"},
		{func(o *Options) { o.Port = 70000 }, "port 70000 out of range"},
		{func(o *Options) { o.Streams = -1 }, "streams must be at least 1"},
		{func(o *Options) { o.Duration = 0 }, "duration must be positive"},
		{func(o *Options) { o.Warmup = -1 }, "warmup must not be negative"},
		{func(o *Options) { o.MessageSize = -5 }, "message size must not be negative"},
		{func(o *Options) { o.Test, o.MessageSize = UDPStream, 10 }, "message size 10 out of range"},
		{func(o *Options) { o.Test, o.MessageSize = UDPRR, 70000 }, "UDP_RR: message size 70000 out of range"},
		{func(o *Options) { o.RateBitsPerSec = -1 }, "rate must not be negative"},
		{func(o *Options) { o.Mode = "spin" }, `unknown mode "spin"`},
	}
	for _, b := range bad {
		o := good
		b.mod(&o)
		err := o.Validate()
		if err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("got %v, want error containing %q", err, b.want)
		}
		if _, rerr := Run(context.Background(), o); rerr == nil {
			t.Errorf("Run accepted options that Validate rejects (%q)", b.want)
		}
	}
}

func TestServerPortInUse(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	s := &Server{Bind: "127.0.0.1", Ports: map[Test]int{TCPStream: 0, UDPStream: 0, TCPRR: port, UDPRR: 0, TCPCRR: -1}}
	before := openFDs(t)
	err = s.Serve(context.Background())
	if err == nil || !strings.Contains(err.Error(), "TCP_RR") || !strings.Contains(err.Error(), strconv.Itoa(port)) ||
		!strings.Contains(err.Error(), "in use") {
		t.Errorf("got %v, want TCP_RR port %d in use", err, port)
	}
	if after := openFDs(t); after != before {
		t.Errorf("failed Listen left %d fds open", after-before)
	}
}

// Every test, in both modes, through a server that is then stopped: no fd
// and no goroutine may survive.
func TestNoLeaks(t *testing.T) {
	round := func() {
		s := freePortServer("127.0.0.1")
		stop := serve(t, s)
		for _, tt := range Tests {
			for _, m := range []Mode{Blocking, BusyPoll} {
				o := opts(s, tt, 100*time.Millisecond)
				o.Streams, o.Mode = 2, m
				o.RateBitsPerSec = 10e6
				if _, err := Run(context.Background(), o); err != nil {
					t.Fatal(err)
				}
			}
			// and an aborted run
			o := opts(s, tt, 5*time.Second)
			cctx, ccancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			_, _ = Run(cctx, o)
			ccancel()
		}
		if err := stop(); err != nil {
			t.Fatal(err)
		}
	}
	round() // let the runtime open what it keeps (netpoller etc.)
	fds, gs := openFDs(t), runtime.NumGoroutine()
	round()
	if after := openFDs(t); after != fds {
		t.Errorf("fds: %d before, %d after", fds, after)
	}
	deadline := time.Now().Add(time.Second)
	for runtime.NumGoroutine() > gs && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if after := runtime.NumGoroutine(); after > gs {
		t.Errorf("goroutines: %d before, %d after", gs, after)
	}
}

// Bind "" listens dual-stack (or IPv4 only); IPv4 clients must work on every
// test, including UDP_RR's per-client connected sockets.
func TestServerAllAddresses(t *testing.T) {
	s := freePortServer("")
	stop := serve(t, s)
	defer func() {
		if err := stop(); err != nil {
			t.Error(err)
		}
	}()
	for _, tt := range Tests {
		o := opts(s, tt, 100*time.Millisecond)
		o.Streams = 2
		o.RateBitsPerSec = 10e6
		r := run(t, o)
		if r.Transactions == 0 && r.BytesReceived == 0 {
			t.Errorf("%s: no traffic", tt)
		}
		if r.Errors != 0 {
			t.Errorf("%s: %d errors: %s", tt, r.Errors, r.ErrorMsg)
		}
	}
}

// A server whose accept queue is full drops SYNs, like a black hole: the
// first connect must time out with a clear error instead of hanging.
func TestConnectTimeout(t *testing.T) {
	old := connectTimeout
	connectTimeout = 300 * time.Millisecond
	defer func() { connectTimeout = old }()

	lfd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(lfd)
	if err := unix.Bind(lfd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := unix.Listen(lfd, 0); err != nil {
		t.Fatal(err)
	}
	sa, _ := unix.Getsockname(lfd)
	port := sa.(*unix.SockaddrInet4).Port
	// Fill the accept queue (never accepted).
	for range 3 {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer unix.Close(fd)
		_ = unix.Connect(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}, Port: port})
	}
	time.Sleep(50 * time.Millisecond)
	for _, tt := range []Test{TCPRR, TCPCRR, TCPStream} {
		o := Options{Test: tt, Host: "127.0.0.1", Port: port, RunnerOptions: kinds.RunnerOptions{Duration: Duration(5 * time.Second)}}
		start := time.Now()
		_, err := Run(context.Background(), o)
		d := time.Since(start)
		t.Logf("%s: %v", tt, err)
		if err == nil || !strings.Contains(err.Error(), "timed out") || !strings.HasPrefix(err.Error(), string(tt)) {
			t.Errorf("%s: got %v, want a connect timeout", tt, err)
		}
		if d > 2*time.Second {
			t.Errorf("%s: took %s", tt, d)
		}
	}
}
